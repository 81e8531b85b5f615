"""Each start's worker in a cgroup v2 of its own: one write kills, freezes or lists every process it made.

A process group is not enough: a framework may start its browser detached (Puppeteer's default
launch puts Chromium in a session of its own and talks to it over a WebSocket), and a SIGKILL of the
start's group leaves the whole browser running, reparented to init. A cgroup holds every process
spawned from the start, whatever sessions or groups they make, and the kernel can SIGKILL all of
them at once (`cgroup.kill`, Linux 5.14) or freeze them (`cgroup.freeze`).

- **The box**: a worker is spawned as `sh -c 'echo $$ > BOX/cgroup.procs && exec "$@"'`, so it is in
  its cgroup before it runs a line of its own (the shell's pid becomes the worker's; `preexec_fn` is
  unsafe in a process with threads, as the harness is). The boxes of one harness live under one
  parent, `killtest-<pid>-<start time>`, in the harness's own cgroup of the writable cgroup2 mount
  (`/sys/fs/cgroup/unified` on a hybrid host, `/sys/fs/cgroup` on a pure v2 one). The watchdog
  (killtest.harness.lifeline) kills that parent when the harness dies; `sweep_dead_parents` removes
  what a dead harness whose watchdog also died left behind.
- **The mark**: every worker is also started with `KILLTEST_START_MARK=<box name>` in its
  environment, which its children inherit. Where no cgroup is writable (no cgroup2 mount, not root, a
  container's read-only cgroupfs) the box is found by walking /proc for processes carrying the mark:
  slower, and blind to a child that clears its environment, but it still reaches a detached browser.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import signal
import threading
import time

from killtest.harness.errors import KilltestError

MARK = "KILLTEST_START_MARK"
DISABLE = "KILLTEST_NO_CGROUP"  # set to 1: use the marks alone (for the fallback's tests, or a hostile host)
MOUNTS = ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")
PARENT_PREFIX = "killtest-"
POLL_S = 0.005
_lock = threading.Lock()
_parent: str | None = None
_checked = False
_names = itertools.count(1)


def _cgroup2_mounts() -> list[str]:
    """The cgroup2 mount points, the usual places first."""
    try:
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            found = [line.split()[1] for line in mounts if line.split()[2:3] == ["cgroup2"]]
    except OSError:
        return []
    return sorted(found, key=lambda path: MOUNTS.index(path) if path in MOUNTS else len(MOUNTS))


def _own_cgroup(pid: int | str = "self") -> str:
    """A process's cgroup v2 path (the `0::` line of /proc/PID/cgroup), relative to the mount."""
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("0::"):
                    return line[3:].strip().lstrip("/")
    return ""


def start_ticks(pid: int) -> int:
    """When `pid` started, in clock ticks since the machine booted (/proc/PID/stat's starttime): it never changes
    for a process, whatever the wall clock does (lifeline's owners and registered processes are known by it too)."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[19])


def _identity(pid: int) -> str:
    return f"{pid}-{start_ticks(pid)}"  # pid and start time in ticks


def parents_of(pid: int) -> list[str]:
    """Where the parent cgroup of harness `pid` is or would be, on each cgroup2 mount (for its watchdog)."""
    with contextlib.suppress(OSError, IndexError):
        return [os.path.join(mount, _own_cgroup(pid), PARENT_PREFIX + _identity(pid)) for mount in _cgroup2_mounts()]
    return []


def parent() -> str | None:
    """This harness's parent cgroup, made on first use; None when no cgroup2 is writable here."""
    global _parent, _checked
    with _lock:
        if _checked:
            return _parent
        _checked = True
        if os.environ.get(DISABLE) == "1":
            return None
        for mount in _cgroup2_mounts():
            path = os.path.join(mount, _own_cgroup(), PARENT_PREFIX + _identity(os.getpid()))
            try:
                os.makedirs(path, exist_ok=True)
            except OSError:
                continue
            if os.path.exists(os.path.join(path, "cgroup.procs")):
                _parent = path
                atexit.register(_remove_parent)
                return path
        return None


def _remove_parent() -> None:
    """At a normal exit every box is empty and removed already: the parent goes too."""
    if _parent is not None:
        with contextlib.suppress(OSError):
            os.rmdir(_parent)


class Box:
    """One worker's cgroup (or, without one, its mark): kill, freeze, list and remove what it holds."""

    def __init__(self, label: str) -> None:
        self.name = f"{label}-{next(_names)}"
        self.mark = f"{os.getpid()}:{self.name}"
        top = parent()
        self.path: str | None = None
        if top is not None:
            with contextlib.suppress(OSError):
                os.mkdir(os.path.join(top, self.name))
                self.path = os.path.join(top, self.name)

    def wrap(self, command: list[str]) -> list[str]:
        """`command` run inside the box: a shell enters the cgroup, then becomes the command."""
        if self.path is None:
            return command
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', os.path.join(self.path, "cgroup.procs"), *command]

    def environment(self) -> dict[str, str]:
        return {MARK: self.mark}

    def enter(self, pid: int) -> None:
        """Move an already running process (a pre-forked start) into the box."""
        if self.path is not None:
            with contextlib.suppress(OSError):
                _write(os.path.join(self.path, "cgroup.procs"), str(pid))

    def pids(self) -> list[int]:
        """Every process in the box now."""
        if self.path is not None:
            try:
                with open(os.path.join(self.path, "cgroup.procs"), encoding="utf-8") as procs:
                    return [int(line) for line in procs if line.strip()]
            except OSError:
                return []
        return marked(self.mark)

    def kill(self) -> None:
        """SIGKILL every process in the box, at once where the kernel can (`cgroup.kill`)."""
        if self.path is not None:
            try:
                _write(os.path.join(self.path, "cgroup.kill"), "1")
                return
            except OSError:
                pass  # a kernel before 5.14 has no cgroup.kill: signal each member
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def cpu_wait_s(self) -> float | None:
        """How long, in all, some process in the box was ready to run and waited for a CPU: the `some` total
        of its pressure stall information (cpu.pressure, Linux 4.20; kept for any cgroup v2 node, the cpu
        controller enabled or not). None without a cgroup, or where the kernel keeps no pressure."""
        if self.path is None:
            return None
        try:
            with open(os.path.join(self.path, "cpu.pressure"), encoding="ascii") as pressure:
                for line in pressure:
                    if line.startswith("some "):
                        return int(line.rsplit("total=", 1)[1]) / 1e6  # microseconds
        except (OSError, ValueError, IndexError):
            return None
        return None

    def freeze(self, frozen: bool) -> None:
        """Freeze (or thaw) every process in the box, a detached browser included."""
        if self.path is not None:
            with contextlib.suppress(OSError):
                _write(os.path.join(self.path, "cgroup.freeze"), "1" if frozen else "0")
                return
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP if frozen else signal.SIGCONT)

    def empty(self, patience_s: float = 3.0) -> int:
        """Kill until nothing is left in the box, then remove it; how many processes were found still there."""
        found = len(self.pids())
        until = time.monotonic() + patience_s
        while self.pids():
            self.kill()
            if time.monotonic() > until:
                raise KilltestError(f"processes of {self.name} survived SIGKILL for {patience_s:g}s: {self.pids()}")
            time.sleep(POLL_S)
        self.remove(max(0.0, until - time.monotonic()))
        return found

    def remove(self, patience_s: float = 1.0) -> None:
        """Remove the box's folder: the kernel refuses (EBUSY) while a killed member is still exiting."""
        until = time.monotonic() + patience_s
        while self.path is not None:
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > until:
                    return  # left for the parent's removal, or the sweep after this harness
                time.sleep(POLL_S)


def marked(mark: str, prefix: bool = False) -> list[int]:
    """The pids of every process whose environment carries KILLTEST_START_MARK=`mark` (the fallback), or,
    with `prefix`, a mark that starts with it (every box of one harness: `<its pid>:`)."""
    needle = f"\0{MARK}={mark}".encode() + (b"" if prefix else b"\0")
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if needle in b"\0" + environ.read() + b"\0":
                    found.append(int(entry))
    return found


def kill_tree(path: str, patience_s: float = 3.0) -> None:
    """SIGKILL everything under cgroup `path` (cgroup.kill is recursive), wait for it, remove the folders."""
    with contextlib.suppress(OSError):
        _write(os.path.join(path, "cgroup.kill"), "1")
    until = time.monotonic() + patience_s
    while time.monotonic() < until:
        for folder, _, _ in sorted(os.walk(path), key=lambda entry: -len(entry[0])):
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        if not os.path.exists(path):
            return
        time.sleep(POLL_S)


def sweep_dead_parents() -> list[str]:
    """Kill and remove the parent cgroups of harnesses that are gone (whose watchdog died with them)."""
    removed = []
    for mount in _cgroup2_mounts():
        base = os.path.join(mount, _own_cgroup())
        with contextlib.suppress(OSError):
            for name in os.listdir(base):
                pid, _, ticks = name[len(PARENT_PREFIX):].partition("-")
                if not (name.startswith(PARENT_PREFIX) and pid.isdigit()) or _alive(int(pid), ticks):
                    continue
                kill_tree(os.path.join(base, name))
                removed.append(os.path.join(base, name))
    return removed


def _alive(pid: int, ticks: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19] == ticks
    except (OSError, IndexError):
        return False


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
