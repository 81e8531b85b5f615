"""How the builders of pinned envs take turns, and the log of every build (harness/tool_envs.py builds them).

One env at a time, not one kind at a time: a builder holds an flock on its own build folder
(`<hash>.<pid>-<ns>`) for as long as it installs, so a process that wants the same env waits for that one
build, and a process that wants another env builds it meanwhile. Until 2026-12-06 the lock was the kind's
folder, held through the whole install: CI's prebuild installing Crawlee kept the test that needed the
Playwright case's env (built in 20 s) waiting 74 s, an xdist worker idle. The kind's folder is still locked,
briefly, while a builder looks for the env, claims its build folder or swaps its link in: no lock file is ever
left among the envs, and a builder killed midway holds no lock (the lock goes with its descriptor).

KILLTEST_ENV_LOG=FILE: each build, each wait for another process's build and each failure appended to FILE as
a JSON line (the env, its pins, seconds, who asked: the pytest test or the command). CI prints them in its phase
table (.ci/phases.py), so a CI log says which env was built where, how long it took, and what waited for it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator

import psutil

LOG = "KILLTEST_ENV_LOG"


@contextlib.contextmanager
def kind_locked(root: str) -> Iterator[None]:
    """The kind's folder locked (flock of the directory itself): held only to look, to claim and to swap."""
    descriptor = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def claim(folder: str) -> int:
    """Make the build folder and hold its lock: the descriptor to close when the build is over (or failed).
    Called with the kind's folder locked, so no one can see the folder before it is locked."""
    os.makedirs(folder)
    with open(os.path.join(folder, ".builder"), "w") as out:
        out.write(str(os.getpid()))
    descriptor = os.open(folder, os.O_RDONLY)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    return descriptor


def being_built(root: str, digest: str, linked: str) -> str | None:
    """A build folder of this hash whose builder is at work (another process, or another thread of this one)."""
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if name.startswith(digest + ".") and not os.path.islink(path) and os.path.isdir(path) \
                and os.path.realpath(path) != linked and builder_alive(path):
            return path
    return None


def open_build(folder: str) -> int | None:
    """A descriptor of a build folder to wait on (None when it is gone already: its builder failed)."""
    try:
        return os.open(folder, os.O_RDONLY)
    except FileNotFoundError:
        return None


def wait_for(descriptor: int) -> None:
    """Until the builder of that folder is done (its lock released), whether it succeeded or not."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH)
    finally:
        os.close(descriptor)


def builder_alive(folder: str) -> bool:
    """Whether some builder is at work in `folder`: its lock is held (any process, this one's threads
    included), or its .builder file names a live process other than this one (a builder of an older killtest,
    which locked the kind's folder instead)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return True
        finally:
            os.close(descriptor)
    try:
        with open(os.path.join(folder, ".builder")) as src:
            pid = int(src.read().strip() or 0)
    except (OSError, ValueError):
        pid = 0
    return bool(pid and pid != os.getpid() and psutil.pid_exists(pid))


def record(event: str, kind: str, digest: str, packages: tuple[str, ...], seconds: float, root: str,
           **more: object) -> None:
    """One line in KILLTEST_ENV_LOG's file, if it is set: `built`, `waited` (another process built it) or
    `failed`, with the cache folder (`root`: a test may build in a cache of its own). One short write in append
    mode, so the lines of concurrent builders never interleave."""
    path = os.environ.get(LOG)
    if not path:
        return
    asker = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0] \
        or " ".join(os.path.basename(word) for word in sys.argv[:3])
    line = json.dumps({"event": event, "env": f"{kind}/{digest}", "packages": list(packages),
                       "seconds": round(seconds, 1), "at": round(time.time(), 1), "pid": os.getpid(),
                       "asker": asker, "root": root, **more})
    with contextlib.suppress(OSError):
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")
