"""Nothing outlives the harness: a watchdog for its processes, and temporary directories that name their owner.

A CI runner's timeout SIGKILLs killtest, and a SIGKILLed process runs no cleanup: its scrapers, its
pre-fork helper, its private PostgreSQL (whose backends sit in sessions of their own) and Redis
would run on, and its temporary directories stay. Two things make up for that:

- **The watchdog**, one small process per harness (`python -m killtest.harness.lifeline PID`), in a session of
  its own so that a signal to the harness's process group does not reach it. The harness tells it
  every process it starts (`register`: each one leads a session of its own) and every temporary
  directory it makes. When the harness is gone (its pidfd turns readable, or its end of the pipe
  closes without a goodbye) the watchdog SIGKILLs each registered process still alive, every process
  of its session and every descendant (a tracee of strace, a PostgreSQL backend), every process in
  the harness's cgroups and every one carrying its starts' mark (killtest.harness.cgroups: a browser
  launched detached by a killed start is in none of the others), waits until they are gone, then
  removes the directories. `PR_SET_PDEATHSIG` was the alternative: it needs a
  `preexec_fn` on every spawn, is cleared by PostgreSQL's change of user, fires on the death of the
  parent *thread*, and reaches no grandchild; the watchdog covers all of them from one place.
- **Owned temporary directories**: each `killtest-*` directory holds `.killtest-owner`, the pid and
  start time of the harness that made it. `sweep_dead_temp_dirs`, which every killtest command runs
  first, removes the directories whose owner is gone (a watchdog killed with its harness, a machine
  that lost power) and never one whose owner still runs, so concurrent campaigns leave each other alone.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator

import psutil

from killtest.harness import cgroups

OWNER_FILE = ".killtest-owner"
_OWNER_IN_NAME = re.compile(r"-(\d+)@(\d+(?:\.\d+)?)-[^-@]+$")  # owned_temp_dir's PID@START before its suffix
PREFIX = "killtest-"
GOODBYE = "bye"
_lock = threading.Lock()
_watchdog: subprocess.Popen | None = None


_TICKS = os.sysconf("SC_CLK_TCK")
_EPOCH_AFTER = 1e8  # an owner file's start time above this is seconds since 1970 (killtest before 2026-12-05)


def _since_boot(pid: int) -> float | None:
    """When `pid` started, in seconds since the machine booted (cgroups.start_ticks): unlike psutil's create_time
    (that plus the boot time the wall clock implies, which moves when the clock is stepped, as on a virtual
    machine resumed from a snapshot), it never changes for a process."""
    try:
        return cgroups.start_ticks(pid) / _TICKS
    except (OSError, IndexError, ValueError):
        return None


def identity(pid: int) -> tuple[int, float] | None:
    """(pid, start time since boot) of a running process: a pid alone may be reused by another process."""
    started = _since_boot(pid)
    return None if started is None else (pid, started)


def _same_process(pid: int, created: float) -> psutil.Process | None:
    try:
        process = psutil.Process(pid)
        if created > _EPOCH_AFTER:  # written by an older killtest: its wall-clock reading, compared as it was
            return process if abs(process.create_time() - created) < 0.05 else None
        started = _since_boot(pid)
        return process if started is not None and abs(started - created) < 0.05 else None
    except psutil.NoSuchProcess:
        return None


# The harness's side -------------------------------------------------------------------------------

def ensure_watchdog() -> None:
    """Start this process's watchdog, once; it says goodbye at a normal exit."""
    global _watchdog
    cgroups.sweep_dead_parents()  # what a harness SIGKILLed with its watchdog left in the cgroup tree
    with _lock:
        if _watchdog is not None and _watchdog.poll() is None:
            return
        me = identity(os.getpid())
        assert me is not None
        _watchdog = subprocess.Popen([sys.executable, "-m", "killtest.harness.lifeline", str(me[0]), repr(me[1])],
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     text=True, start_new_session=True)
    atexit.register(stop_watchdog)


def stop_watchdog() -> None:
    """Tell the watchdog all is clean (a normal exit), and let it go."""
    global _watchdog
    with _lock:
        watchdog, _watchdog = _watchdog, None
    if watchdog is None:
        return
    with contextlib.suppress(OSError, ValueError):
        assert watchdog.stdin is not None
        watchdog.stdin.write(GOODBYE + "\n")
        watchdog.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        watchdog.wait(timeout=5)


def _tell(line: str) -> None:
    with _lock:
        if _watchdog is None or _watchdog.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            _watchdog.stdin.write(line + "\n")
            _watchdog.stdin.flush()


def register(pid: int) -> None:
    """A process the harness started (a session leader): the watchdog kills it and its session if the harness dies,
    and the session runs at the harness's own priority (`share_priority`)."""
    known = identity(pid)
    if known is not None:
        _tell(f"pid {known[0]} {known[1]!r}")
    share_priority(pid)


def share_priority(pid: int | str = "self") -> None:
    """Give the session `pid` leads the harness's niceness where the kernel groups sessions (autogroup).

    With `kernel.sched_autogroup_enabled` (most distributions' default), the scheduler shares the CPU between
    sessions first, and a new session's group starts at nice 0 whatever its processes' own niceness: every
    start, server and zygote the harness starts leads a session of its own (for its signals), so `nice killtest
    ...` left all of them at full priority. Writing the niceness to /proc/PID/autogroup sets the whole session's
    group (sched(7)). A harness at nice 0 changes nothing; no autogroup, or a process already gone, is no error.
    """
    niceness = os.getpriority(os.PRIO_PROCESS, 0)
    if niceness <= 0:
        return
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/autogroup", "w", encoding="ascii") as group:
            group.write(str(niceness))


def owned_temp_dir(prefix: str = PREFIX, dir: str | None = None) -> str:
    """A new temporary directory whose `.killtest-owner` names this process; the watchdog knows it.

    Its name names the owner too (`killtest-explore-PID@START-xxxxxxxx`): a SIGKILL between making it and writing
    the file (a job process the watchdog killed, seen in CI) leaves a directory the next sweep still knows."""
    me = identity(os.getpid())
    assert me is not None
    path = tempfile.mkdtemp(prefix=f"{prefix}{me[0]}@{me[1]!r}-", dir=dir)
    try:  # a Ctrl+C or SIGTERM here would leave a directory whose owner only its name says
        with open(os.path.join(path, OWNER_FILE), "w", encoding="utf-8") as owner:
            owner.write(f"{me[0]} {me[1]!r}\n")
        _tell(f"dir {path}")
    except BaseException:
        remove_dir(path)
        raise
    return path


@contextlib.contextmanager
def temp_dir(prefix: str = PREFIX, dir: str | None = None) -> Iterator[str]:
    """`owned_temp_dir` removed when the block ends."""
    path = owned_temp_dir(prefix, dir)
    try:
        yield path
    finally:
        remove_dir(path)


def remove_dir(path: str) -> None:
    """Remove a directory whole, even when Ctrl+C or SIGTERM lands in the middle: the removal is finished,
    then the interrupt raised again (killtest's handler lets one interrupt through, not a second)."""
    try:
        shutil.rmtree(path, ignore_errors=True)
    except KeyboardInterrupt:
        shutil.rmtree(path, ignore_errors=True)
        raise


def owner_of(path: str) -> tuple[int, float] | None:
    """(pid, start time) from a directory's owner file, or its name when the file was not written yet (a SIGKILL
    in between); None when neither says (not ours)."""
    try:
        with open(os.path.join(path, OWNER_FILE), encoding="utf-8") as owner:
            pid, created = owner.read().split()
        return int(pid), float(created)
    except (OSError, ValueError):
        named = _OWNER_IN_NAME.search(os.path.basename(path))
        return (int(named[1]), float(named[2])) if named else None


def sweep_dead_temp_dirs(roots: list[str | None] | None = None) -> list[str]:
    """Remove every `killtest-*` directory under `roots` (the temp dir by default) whose owner is dead."""
    removed = []
    for root in dict.fromkeys(roots or [None]):
        base = root or tempfile.gettempdir()
        try:
            names = [n for n in os.listdir(base) if n.startswith(PREFIX)]
        except OSError:
            continue
        for name in names:
            path = os.path.join(base, name)
            owner = owner_of(path)
            if owner is not None and _same_process(*owner) is None:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return removed


# The watchdog's side ------------------------------------------------------------------------------

def _everything_of(registered: dict[int, float]) -> list[psutil.Process]:
    """Each registered process still alive, every member of its session, and all their descendants."""
    found: dict[int, psutil.Process] = {}
    sessions = set()
    for pid, created in registered.items():
        process = _same_process(pid, created)
        if process is not None:
            found[pid] = process
            sessions.add(pid)
        elif not psutil.pid_exists(pid):
            sessions.add(pid)  # the leader is gone; members of its session may not be
    for process in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if process.pid != os.getpid() and os.getsid(process.pid) in sessions:
                found[process.pid] = process
    for process in list(found.values()):
        with contextlib.suppress(psutil.Error):
            for child in process.children(recursive=True):
                found[child.pid] = child
    return [p for pid, p in found.items() if pid != os.getpid()]


def _kill_and_clean(registered: dict[int, float], dirs: list[str], owner: tuple[int, float],
                    boxes: list[str]) -> None:
    for path in boxes:  # first and at once: the kernel kills every process of every start's cgroup
        cgroups.kill_tree(path)
    processes = _everything_of(registered)
    processes += [p for p in map(_process, cgroups.marked(f"{owner[0]}:", prefix=True)) if p is not None]
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.send_signal(signal.SIGKILL)
    psutil.wait_procs(processes, timeout=1.5)
    for path in dirs:
        if owner_of(path) in (owner, None):
            shutil.rmtree(path, ignore_errors=True)
    sweep_dead_temp_dirs([tempfile.gettempdir(), *{os.path.dirname(d) for d in dirs}])


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def watch(pid: int, created: float) -> None:
    """Until the harness says goodbye, note what it registers; if it dies instead, kill and clean up after it."""
    registered: dict[int, float] = {}
    dirs: list[str] = []
    boxes = cgroups.parents_of(pid)  # where the harness's cgroup boxes will be: read while it is alive
    try:
        harness = os.pidfd_open(pid)
    except ProcessLookupError:
        harness = None
    pending = ""
    alive = harness is not None
    while True:
        if alive and harness is not None:
            ready, _, _ = select.select([sys.stdin.fileno(), harness], [], [])
            alive = harness not in ready
        else:  # dead: read what is left in the pipe (its last registrations), but never wait on it for long
            ready, _, _ = select.select([sys.stdin.fileno()], [], [], 0.5)
            if not ready:
                break
        if sys.stdin.fileno() not in ready:
            continue  # the harness is gone: read what it left in the pipe next
        chunk = os.read(sys.stdin.fileno(), 65536).decode()
        if chunk == "":
            break  # the pipe closed without a goodbye: the harness is gone and all it said is read
        pending += chunk
        *lines, pending = pending.split("\n")
        for line in lines:
            if line == GOODBYE:
                return
            kind, _, rest = line.partition(" ")
            if kind == "pid":
                child, child_created = rest.split()
                registered[int(child)] = float(child_created)
            elif kind == "dir":
                dirs.append(rest)
    _kill_and_clean(registered, dirs, (pid, created), boxes)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl+C is the harness's to handle
    watch(int(sys.argv[1]), float(sys.argv[2]))
