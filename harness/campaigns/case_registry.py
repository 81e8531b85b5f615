"""A framework's releases as its registry lists them (pip's and npm's own listings), in version order.

`killtest cases --bisect` runs a case on the releases between two versions; which releases exist is the
registry's answer, asked through its ordinary client, never a list written here: `pip index versions
NAME --json` (pip orders it newest first, and leaves prereleases out unless `--pre`) and `npm view NAME
versions --json` (every version ever published; prereleases, those with a `-` after the patch number, are
left out here unless asked). Asked once per package and process.

A pin moves with the release bisected: every pin of the template release at the framework's version (a
monorepo's packages, crawlee@3.2.2 with its fourteen @crawlee/* pins) is pinned, for release V, at the
newest version of its own package not newer than V: a monorepo does not publish every package at every
release (npm has crawlee@3.1.3 but no @crawlee/memory-storage@3.1.3), and that newest one is what
`crawlee@3.1.3`'s caret ranges resolved to the day it came out.

A registry may lack releases upstream made: the npm registry this machine reaches has no crawlee@3.10.0,
the release whose changelog makes the locking queue the default. A bisection that reports "3.9.2 the last
clean, 3.10.1 the first flagged" must say so, with what upstream's changelog says changed there: a case
keeps those releases in scrapers/cases/<case>/bisect.toml (`[[missing]]`, each quoted from the changelog
with a link), and `missing_between` keeps those the registry's listing lacks, each placed after the newest
release the registry has before it.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from killtest.harness.errors import KilltestError

_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+.*)?$")
_PIP_NAME = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?P<extras>\[[^\]]*\])?==(?P<version>.+)$")
_NPM_NAME = re.compile(r"^(?P<name>(?:@[^/]+/)?[^@]+)@(?P<version>.+)$")


def split_pin(runtime: str, pin: str) -> tuple[str, str, str]:
    """(name, extras, version) of `name[extras]==version` (pip) or `name@version` (npm)."""
    found = (_PIP_NAME if runtime == "python" else _NPM_NAME).match(pin)
    if found is None:
        raise KilltestError(f"{pin!r} is not an exact pin")
    return found["name"], found.groupdict().get("extras") or "", found["version"]


def npm_key(version: str) -> tuple:
    """semver's order: numbers, then a release after its own prereleases, prerelease parts compared as
    numbers where they are numbers (3.13.3-beta.10 after 3.13.3-beta.9)."""
    found = _SEMVER.match(version)
    if found is None:
        return (-1, -1, -1, 0, ())
    major, minor, patch, pre = found.groups()
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in (pre or "").split(".") if p)
    return (int(major), int(minor), int(patch), 0 if pre else 1, parts)


def is_npm_prerelease(version: str) -> bool:
    found = _SEMVER.match(version)
    return found is None or found[4] is not None


def _ask(command: list[str], what: str) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise KilltestError(f"{what}: the registry did not answer ({error})") from None
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr + done.stdout).splitlines()
                 if line.strip() and not line.startswith("WARNING: Location")]
        complaint = next((line for line in reversed(lines) if "ERROR" in line or "ERR!" in line),
                         lines[-1] if lines else f"exit status {done.returncode}")
        raise KilltestError(f"{what} failed: {complaint}")
    return done.stdout


@functools.cache
def releases(runtime: str, name: str, pre: bool = False) -> tuple[str, ...]:
    """Every release of `name` on its registry, oldest first (prereleases only when `pre`)."""
    if runtime == "python":
        command = [sys.executable, "-m", "pip", "index", "versions", name, "--disable-pip-version-check",
                   *(["--pre"] if pre else [])]
        try:
            out = _ask([*command, "--json"], f"pip index versions {name}")
        except KilltestError as error:  # pip before 23.3 (a new venv's own) has no --json: its text says the same
            if "--json" not in str(error):
                raise
            line = next((ln for ln in _ask(command, f"pip index versions {name}").splitlines()
                         if ln.startswith("Available versions:")), None)
            if line is None:
                raise KilltestError(f"pip index versions {name}: no 'Available versions:' line") from None
            return tuple(reversed([v.strip() for v in line.partition(":")[2].split(",") if v.strip()]))
        try:
            listed = json.loads(out)["versions"]
        except (ValueError, KeyError, TypeError):
            raise KilltestError(f"pip index versions {name}: not the JSON listing pip gives") from None
        return tuple(reversed(listed))  # pip lists newest first, in PEP 440's order
    if shutil.which("npm") is None:
        raise KilltestError("a node case needs `npm` on PATH to list its releases")
    out = _ask(["npm", "view", name, "versions", "--json"], f"npm view {name} versions")
    try:
        listed = json.loads(out)
    except ValueError:
        raise KilltestError(f"npm view {name} versions: not the JSON listing npm gives") from None
    listed = [listed] if isinstance(listed, str) else listed  # a package of one version is a string
    return tuple(sorted((v for v in listed if pre or not is_npm_prerelease(v)), key=npm_key))


def between(listed: tuple[str, ...], first: str, last: str, name: str) -> list[str]:
    """The releases from `first` to `last`, both included, in the registry's order; a version the registry
    does not list is one line naming its neighbours."""
    for version in (first, last):
        if version not in listed:
            raise KilltestError(f"{name} {version} is not a release on the registry"
                                f" ({len(listed)} listed, {listed[0] if listed else '-'} to"
                                f" {listed[-1] if listed else '-'}; prereleases need --pre)")
    a, b = listed.index(first), listed.index(last)
    if a >= b:
        raise KilltestError(f"--from {first} is not older than --to {last} on the registry")
    return list(listed[a:b + 1])


def moved_pins(runtime: str, pins: tuple[str, ...], version: str, target: str, pre: bool = False) -> tuple[str, ...]:
    """The template's `pins` for release `target`: each pin at the template's `version` moves to the newest
    release of its own package not newer than `target`; the others stay as they are."""
    moved = []
    for pin in pins:
        name, extras, at = split_pin(runtime, pin)
        if at != version:
            moved.append(pin)
            continue
        own = releases(runtime, name, pre)
        older = [v for v in own if v == target] or _not_newer(runtime, own, target)
        if not older:
            raise KilltestError(f"{name} has no release at or before {target}")
        moved.append(f"{name}{extras}=={older[-1]}" if runtime == "python" else f"{name}@{older[-1]}")
    return tuple(moved)


def _not_newer(runtime: str, own: tuple[str, ...], target: str) -> list[str]:
    if runtime == "node":
        return [v for v in own if npm_key(v) <= npm_key(target)]
    return []  # a Python pin is moved only to a release of its own package that exists (pip's order is PEP 440's)


def version_key(runtime: str) -> Callable[[str], Any]:
    """The registry's order of versions: semver's for npm; for pip, the release numbers, then a final release after
    its own pre-releases (2.14.0rc1 before 2.14.0): PEP 440's order for the versions a case names."""
    if runtime == "node":
        return npm_key

    def release(version: str) -> Any:
        found = re.match(r"^(\d+(?:\.\d+)*)(.*)$", version)
        if found is None:
            raise KilltestError(f"{version!r} is not a release number")
        numbers = [int(n) for n in found[1].split(".")]
        while len(numbers) > 1 and numbers[-1] == 0:
            numbers.pop()  # 2.14 is 2.14.0
        return (tuple(numbers), 0 if found[2] and not found[2].startswith(".post") else 1, found[2])
    return release


def missing_between(runtime: str, notes: list[dict], listed: tuple[str, ...] | list[str], first: str,
                    last: str) -> list[dict]:
    """The releases of `notes` (upstream's, each {"version", ...}) newer than `first` and older than `last` that
    `listed` (the registry's, oldest first) lacks, oldest first, each with `after`: the newest listed release
    older than it (where a boundary next to it lies)."""
    key = version_key(runtime)
    kept = []
    for note in sorted(notes, key=lambda note: key(note["version"])):
        version = note["version"]
        if version in listed or not key(first) < key(version) < key(last):
            continue
        older = [v for v in listed if key(v) < key(version)]
        kept.append({**note, "after": older[-1] if older else first})
    return kept
