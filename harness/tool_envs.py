"""Environments of exact pins, built once and cached: a venv (uv or pip) or a node_modules folder (npm), installed by
harness/env_installs.py.

killtest runs other people's programs at pinned releases without installing them beside the user's
own packages (pipx and pre-commit do the same for the tools they run). Three kinds, one folder each
under ~/.cache/killtest/ ($XDG_CACHE_HOME is honoured):
- `cases`: a framework release of scrapers/cases/ (`killtest cases`);
- `tools`: a program killtest itself runs as a subprocess, such as the recording proxy (mitmproxy,
  whose exact caps would otherwise pull the user's environment back);
- `designs`: a design whose spec names `packages` (the peer designs: Scrapy, Crawlee for Python).

An env lives in <kind>/<hash>, the hash of the runtime, its interpreter's version and the pinned
packages. It is built in a folder of its own (<hash>.<token>) and only then named: `<hash>` is a
symbolic link swapped in with one rename when the install finished. An interrupted or failed install
therefore never leaves a `<hash>` that looks good; its folder is removed (or, after a SIGKILL, by the
next build of the same hash). The folder is never moved after the install, because a venv's scripts
carry their own absolute path in their first line. A builder holds a lock on its build folder
(harness/env_builds.py): parallel test workers build an env once, build different envs at once, and never
remove a folder another one is using.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from killtest.harness.env_builds import being_built, builder_alive, claim, kind_locked, open_build, record, wait_for
from killtest.harness.env_contents import installed
from killtest.harness.env_installs import install
from killtest.harness.env_patches import apply_patch, patch_digest, patched_hash
from killtest.harness.errors import KilltestError
from killtest.harness.files import write_atomically

KINDS = ("cases", "tools", "designs")
ABOUT = "killtest-env.json"  # beside installed.json: what was asked for, for whom, and how long the build took


@dataclass(frozen=True)
class CaseEnv:
    """A built env: the folders a run puts first on PATH (and NODE_PATH for node)."""

    runtime: str
    root: str  # the `<hash>` link's path: what a replay line names

    @property
    def bin(self) -> str:  # what a run puts first on PATH
        return os.path.join(self.root, "bin" if self.runtime == "python" else "node_modules/.bin")

    @property
    def python(self) -> str:  # a python env's interpreter: what runs the tool or the design
        return os.path.join(self.root, "bin", "python")

    def environ(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """`base` (os.environ) with the env first on PATH and, for node, NODE_PATH at its node_modules."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = self.bin + os.pathsep + env.get("PATH", "")
        env.pop("PYTHONHOME", None)
        if self.runtime == "node":
            env["NODE_PATH"] = os.path.join(self.root, "node_modules")
        return env

    def shell_prefix(self) -> str:
        """The env assignments a pasted command line needs, before `killtest replay ...`."""
        node = f"NODE_PATH={os.path.join(self.root, 'node_modules')} " if self.runtime == "node" else ""
        return f'{node}PATH={self.bin}:"$PATH"'


def cache_root(kind: str = "cases") -> str:
    """The folder of one kind's envs (`cases`, `tools` or `designs`)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "killtest", kind)


def interpreter_version(runtime: str) -> str:
    """The version an env is built for: killtest's own Python (its venv's base) or the `node` on PATH."""
    if runtime == "python":
        return f"python-{sys.version_info[0]}.{sys.version_info[1]}"
    node = shutil.which("node")
    if node is None:
        raise KilltestError("a node case needs `node` and `npm` on PATH (Node.js 18 or newer)")
    out = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    return "node-" + out.lstrip("v").split(".")[0]


def env_hash(runtime: str, packages: tuple[str, ...] | list[str], interpreter: str) -> str:
    """The cache key: the same runtime, interpreter and pins (in any order) make the same env."""
    text = json.dumps({"runtime": runtime, "interpreter": interpreter, "packages": sorted(packages)})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ensure_env(runtime: str, packages: tuple[str, ...], rebuild: bool = False, say: Callable[[str], None] = print,
               root: str | None = None, kind: str = "cases", patch: str = "") -> CaseEnv:
    """The env of these pins (with `patch` applied to them: harness/env_patches.py, an env of its own), built unless
    a complete one is cached (`rebuild`: build it again anyway). The first use says what it installs and, when done,
    how long it took; a failed install is one line naming the packages and the cache folder."""
    root, digest = root or cache_root(kind), env_hash(runtime, packages, interpreter_version(runtime))
    digest = patched_hash(digest, patch) if patch else digest
    link = os.path.join(root, digest)
    env = CaseEnv(runtime, link)
    if os.path.isdir(link) and not rebuild:
        return env
    try:
        os.makedirs(root, exist_ok=True)
    except OSError as error:
        raise KilltestError(f"cannot create the env cache {root}: {error.strerror}") from None
    asked, waited = time.monotonic(), False
    while True:
        with kind_locked(root):
            if os.path.isdir(link) and not (rebuild and not waited):
                if waited:  # another process built it while this one waited for that build
                    record("waited", kind, digest, packages, time.monotonic() - asked, root)
                return env
            _remove_abandoned(root, digest)
            other = being_built(root, digest, os.path.realpath(link))
            if other is None:
                folder = os.path.join(root, f"{digest}.{os.getpid()}-{time.time_ns()}")
                lock = claim(folder)
                break
            descriptor = open_build(other)
        if descriptor is not None:
            wait_for(descriptor)  # then look again: built, or its builder failed and this one builds it
        waited = True
    try:
        _build(runtime, packages, root, folder, kind, say, patch, hold=lock)
    finally:
        os.close(lock)
    return env


def _build(runtime: str, packages: tuple[str, ...], root: str, folder: str, kind: str,
           say: Callable[[str], None], patch: str = "", hold: int | None = None) -> None:
    digest = os.path.basename(folder).split(".")[0]
    link = os.path.join(root, digest)
    patched = f" patched with {patch}" if patch else ""
    say(f"env {kind}/{digest}: first use, installing {' '.join(packages)} ({runtime}){patched} into {link}")
    started = time.monotonic()
    try:
        installer = install(runtime, packages, folder, hold)
        installed(runtime, folder, packages)  # what the pins resolved to, written beside them (installed.json)
        if patch:  # before the link names it: no run sees the framework half-patched
            apply_patch(runtime, folder, patch)
        seconds = round(time.monotonic() - started, 1)
        write_atomically(os.path.join(folder, ABOUT), json.dumps(
            {"kind": kind, "runtime": runtime, "interpreter": interpreter_version(runtime), "packages": list(packages),
             **({"patch": patch, "patch_sha256": patch_digest(patch)} if patch else {}), "installer": installer,
             "build_s": seconds, "built_at": time.time()}, indent=1) + "\n")
        # Swap the link in with one rename: a reader sees the old env or the complete new one.
        with kind_locked(root):
            temporary = f"{link}.link-{os.getpid()}-{time.time_ns()}"
            os.symlink(os.path.basename(folder), temporary)
            previous = os.path.realpath(link) if os.path.islink(link) else None
            os.replace(temporary, link)
    except KilltestError as error:
        shutil.rmtree(folder, ignore_errors=True)
        record("failed", kind, digest, packages, time.monotonic() - started, root, error=str(error))
        raise KilltestError(f"cannot build the {kind} env of {', '.join(packages)} in {link} (built once, on first"
                            f" use): {error}") from None
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        record("failed", kind, digest, packages, time.monotonic() - started, root, error="interrupted")
        raise
    if previous and previous != os.path.realpath(link):
        shutil.rmtree(previous, ignore_errors=True)
    record("built", kind, digest, packages, seconds, root, installer=installer)
    say(f"env {kind}/{digest}: ready in {seconds:.0f}s by {installer} ({', '.join(packages)})")


@dataclass(frozen=True)
class CachedEnv:
    """One env of the cache, as `killtest envs` lists it."""

    kind: str
    name: str  # the hash: the link's name
    folder: str  # the folder the link names
    size_bytes: int  # every file's size: what the env takes while nothing else holds its files
    packages: tuple[str, ...]  # the pins it was built of (empty for an env built before killtest-env.json)
    build_s: float | None
    interrupted: bool = False  # a build folder no link names whose builder is gone (killed midway)
    shared_bytes: int = 0  # of size_bytes, the files hard-linked elsewhere too (uv's cache): removing frees none

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.name}"


def cached_envs(kinds: tuple[str, ...] = KINDS) -> list[CachedEnv]:
    """Every complete env of these kinds (a link and its folder), by kind then name."""
    found = []
    for kind in kinds:
        root = cache_root(kind)
        names = sorted(os.listdir(root)) if os.path.isdir(root) else []
        for name in names:
            link = os.path.join(root, name)
            if not os.path.islink(link) or not os.path.isdir(link):
                continue
            try:
                with open(os.path.join(link, ABOUT), encoding="utf-8") as src:
                    about = json.load(src)
            except (OSError, ValueError):
                about = {}
            size, shared = _size(os.path.realpath(link))
            found.append(CachedEnv(kind, name, os.path.realpath(link), size, tuple(about.get("packages", ())),
                                   about.get("build_s"), shared_bytes=shared))
    return found


def interrupted_builds(kinds: tuple[str, ...] = KINDS) -> list[CachedEnv]:
    """Build folders no link names and whose builder is gone: an install killed midway (a SIGKILL, a power cut).
    The next build of the same env removes its own; one never built again would stay unseen, so `killtest envs`
    lists these and removes them as it does envs."""
    found = []
    for kind in kinds:
        root = cache_root(kind)
        names = sorted(os.listdir(root)) if os.path.isdir(root) else []
        linked = {os.path.realpath(os.path.join(root, n)) for n in names if os.path.islink(os.path.join(root, n))}
        for name in names:
            path = os.path.join(root, name)
            if "." in name and not os.path.islink(path) and os.path.isdir(path) \
                    and os.path.realpath(path) not in linked and not builder_alive(path):
                size, shared = _size(path)
                found.append(CachedEnv(kind, name, path, size, (), None, interrupted=True, shared_bytes=shared))
    return found


def remove_env(env: CachedEnv) -> None:
    """Remove one env: its link first (so no run takes a half-removed env), then its folder."""
    root = cache_root(env.kind)
    with kind_locked(root):
        if not env.interrupted:  # an interrupted build is a folder only
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(root, env.name))
        shutil.rmtree(env.folder, ignore_errors=True)


def _size(folder: str) -> tuple[int, int]:
    """Every file's size in `folder`, and of that the files with other hard links (uv installs by hard-linking its
    cache's files: harness/env_installs.py)."""
    total = shared = 0
    for top, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                found = os.lstat(os.path.join(top, name))
                total += found.st_size
                shared += found.st_size if found.st_nlink > 1 else 0
    return total, shared


def _remove_abandoned(root: str, digest: str) -> None:
    """Folders of this hash that no link names and whose builder is gone: an install killed midway."""
    linked = os.path.realpath(os.path.join(root, digest))
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if not name.startswith(digest + ".") or os.path.islink(path) or not os.path.isdir(path) \
                or os.path.realpath(path) == linked or builder_alive(path):  # alive: another killtest builds it now
            continue
        shutil.rmtree(path, ignore_errors=True)
