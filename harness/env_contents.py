"""What an env really holds: every package installed, `name==version`, and the pins' direct dependencies.

A case pins its framework's packages; what those pull in floats (crawlee@3.2.2 asks for its @crawlee/*
packages with ^3.2.2, which npm resolves to the newest 3.x). So after an env is built its resolved
packages are written beside it (`installed.json` in the env folder) and carried into each release's
outcome: results/cases.json says what ran, not only what was asked for.

The lists are read from the env's own files, which is what `pip freeze` and `npm ls` read: each
`*.dist-info/METADATA` of the venv's site-packages, each `package.json` under `node_modules/` (nested
ones included; `npm ls` itself lists nothing for an install made without a package.json, as the
cases' `npm install --no-save` is). An env built before this file existed gets it on its next use.
Every kind of env (harness/tool_envs.py: cases, tools, designs) gets the same file.
"""

from __future__ import annotations

import glob
import json
import os
import re

from killtest.harness.files import write_atomically

FILE = "installed.json"
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def installed(runtime: str, root: str, packages: tuple[str, ...] | list[str]) -> dict[str, list[str]]:
    """`{"all": [...], "direct": [...]}` for the env at `root` (read from its installed.json, written first if
    missing): every package as `name==version`, and the pins' own dependencies as resolved (pins left out)."""
    path = os.path.join(root, FILE)
    try:
        with open(path, encoding="utf-8") as src:
            return json.load(src)
    except (OSError, ValueError):
        pass
    found = _python(root, packages) if runtime == "python" else _node(root, packages)
    try:
        write_atomically(path, json.dumps(found, indent=1) + "\n")
    except OSError:
        pass  # a read-only cache: the lists are still carried into the outcome
    return found


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _python(root: str, packages: tuple[str, ...] | list[str]) -> dict[str, list[str]]:
    metadata: dict[str, tuple[str, list[str]]] = {}  # normal name -> (name==version, Requires-Dist lines)
    for path in glob.glob(os.path.join(root, "lib", "python*", "site-packages", "*.dist-info", "METADATA")):
        with open(path, encoding="utf-8", errors="replace") as src:
            head = src.read().split("\n\n", 1)[0].splitlines()
        fields = [line.split(": ", 1) for line in head if ": " in line]
        name = next((v for k, v in fields if k == "Name"), "")
        version = next((v for k, v in fields if k == "Version"), "")
        if name and version:
            metadata[_normal(name)] = (f"{name}=={version}", [v for k, v in fields if k == "Requires-Dist"])
    pinned: dict[str, set[str]] = {}
    for spec in packages:
        name, _, listed = spec.split("==")[0].partition("[")
        pinned[_normal(name)] = {e.strip() for e in listed.rstrip("]").split(",") if e.strip()}
    direct = set()
    for name, extras in pinned.items():
        for requirement in metadata.get(name, ("", []))[1]:
            requirement_name, _, marker = requirement.partition(";")
            wanted, named = _EXTRA.findall(marker), _NAME.match(requirement_name.strip())
            dependency = _normal(named.group(0)) if named else ""
            if (not wanted or set(wanted) & extras) and dependency in metadata and dependency not in pinned:
                direct.add(metadata[dependency][0])  # a dependency another marker left out is not installed
    return {"all": sorted(entry for entry, _ in metadata.values()), "direct": sorted(direct)}


def _node(root: str, packages: tuple[str, ...] | list[str]) -> dict[str, list[str]]:
    found: set[str] = set()

    def manifest(folder: str) -> dict:
        try:
            with open(os.path.join(folder, "package.json"), encoding="utf-8") as src:
                return json.load(src)
        except (OSError, ValueError):
            return {}

    def walk(modules: str) -> None:
        if not os.path.isdir(modules):
            return
        for entry in sorted(os.listdir(modules)):
            if entry.startswith("."):
                continue
            scoped = entry.startswith("@") and os.path.isdir(os.path.join(modules, entry))
            for folder in ([os.path.join(modules, entry, n) for n in sorted(os.listdir(os.path.join(modules, entry)))]
                           if scoped else [os.path.join(modules, entry)]):
                package = manifest(folder)
                if package.get("name") and package.get("version"):
                    found.add(f"{package['name']}=={package['version']}")
                walk(os.path.join(folder, "node_modules"))

    top = os.path.join(root, "node_modules")
    walk(top)
    pinned = {spec.rsplit("@", 1)[0] for spec in packages}
    direct = set()
    for name in pinned:
        own = manifest(os.path.join(top, name))
        for dependency in {**own.get("dependencies", {}), **own.get("optionalDependencies", {})}:
            if dependency in pinned:
                continue
            # Node's resolution: the package's own node_modules first, then the top one.
            for folder in (os.path.join(top, name, "node_modules", dependency), os.path.join(top, dependency)):
                package = manifest(folder)
                if package.get("version"):
                    direct.add(f"{dependency}=={package['version']}")
                    break
    return {"all": sorted(found), "direct": sorted(direct)}
