"""A start's store writes, as strace recorded them, and the strace injection that kills at one of them.

Store-write points (`w5`, and the exact `r5+`) are made of two passes (harness/running/write_plans.py):
1. a recording: the start runs to the end under `strace -f -yy -e trace=<writes and sends> -o LOG`
   (`recording_prefix`); `parse_recording` keeps, in the order strace saw them, every write-type
   system call to a file under the store path or the work dir, and every HTTP request the scraper sent;
2. the kill: the n-th of those writes is turned into what strace's fault injection can count,
   `-e inject=SYSCALL:delay_enter=...:when=K -P PATH...` (`InjectionPlan`; the write gate holds the thread
   there and kills the start); its after twin `aw5` is aimed by the same plan, held with `delay_exit`.

Why two passes: strace counts `when=K` per traced thread and per system call (src/syscall.c,
`tamper_with_syscall_entering`: each tcb gets its own copy of the inject counters, indexed by syscall
number, the first time it is tampered with), and only the calls that pass `-P` are counted (the path
filter sets TCB_FILTERED before the tampering). So "the 5th write to the store" is, from the recording,
"the 3rd pwrite64 of that thread"; the plan is exact when no other thread or process reaches its own
3rd pwrite64 to those paths first (`landing` checks this on the recording), and refused otherwise.

The recording's paths are kept relative to the work dir, so a plan applies to any run's fresh work dir.
Explore offers only the writes two recordings of a start agree on (`agreeing_writes`): a `w5` it prints
must name the same write when `killtest replay` records the start again.
Pure functions: no I/O but what strace wrote.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from killtest.fixture_site.request_log import browser_initiated
from killtest.harness.check.distinct import folded

# Every call that changes a file's content, name or durability (SQLite's journal: pwrite64, fdatasync, unlink).
WRITE_SYSCALLS = ("write", "pwrite64", "writev", "pwritev", "pwritev2", "fsync", "fdatasync", "sync_file_range",
                  "rename", "renameat", "renameat2", "truncate", "ftruncate", "unlink", "unlinkat", "fallocate")
PATH_SYSCALLS = {"rename", "renameat", "renameat2", "truncate", "unlink", "unlinkat"}  # named by path, not fd
SEND_SYSCALLS = ("sendto", "sendmsg", "sendmmsg")  # with write and writev: how a request leaves the scraper
# Writes that go on from a file's current position: two of them on one open file, nothing between, are one
# logical write a buffered stream made in pieces (`Recording.logical_write`). Not pwrite64: a database's
# positioned writes (SQLite's journal and WAL frames) are its own transactions' and keep their own lines.
STREAM_WRITES = ("write", "writev")
CLOSE_SYSCALLS = ("close",)  # traced by the recording only: a close ends the open file (a number is reused)
# A temporary file's random part (Python's tempfile: eight of [a-z0-9_], `7.json.ak7wz2_q.json.tmp`): folded.
TEMPORARY = re.compile(r"(?<=\.)[a-z0-9_]{8}(?=(?:\.[A-Za-z]+)?\.tmp\b)")
HTTP_METHODS = ("GET ", "POST ", "PUT ", "HEAD ", "DELETE ", "PATCH ")
# The harness's own files in the work dir: a start's stdout and stderr (harness/running/processes.py).
HARNESS_FILE = re.compile(r"^start-\d+(-w\d+)?(-r\d+)?\.(out|err)$")

_LINE = re.compile(r"^(?P<tid>\d+)\s+(?P<name>\w+)\((?P<args>.*)$")
_FD_PATH = re.compile(r"^\s*-?\d+<(?P<path>(?:[^<>]|<[^<>]*>)*)>")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
# A write's or pwrite's size (and a pwrite's offset) after its data: `"abc"..., 31, 30) = 31`.
_SIZE = re.compile(r'"(?:[^"\\]|\\.)*"(?:\.\.\.)?, (?P<size>\d+)(?:, (?P<offset>\d+))?\)')


@dataclass(frozen=True)
class StoreCall:
    """One write-type call to the store: its thread, system call, paths, and its count in that thread."""

    tid: int
    syscall: str
    paths: tuple[str, ...]  # relative to the work dir ("" is the work dir itself), or absolute outside it
    count: int = 0  # the how-many-th call of `syscall` to the store by `tid`, 1-based: strace's `when`
    # What a write or pwrite asked for (bytes, and the offset of a pwrite), for the words that describe it.
    size: int | None = field(default=None, compare=False)
    offset: int | None = field(default=None, compare=False)
    fd: int | None = field(default=None, compare=False)  # the file descriptor it was made on (None: by path)
    # It goes on with the write before it: a stream write by the same thread on the same open file (same fd, not
    # closed between), with nothing between them (no request, no other store call: no fsync, no other file).
    goes_on: bool = field(default=False, compare=False)

    @property
    def aim(self) -> tuple[str, int, tuple[str, ...]]:
        """What strace's count names, and the file: the same on every recording of the same write (the
        thread's id is not: it is new each start; nor is what it writes: WAL salts, timestamps)."""
        return self.syscall, self.count, self.paths


@dataclass(frozen=True)
class InjectionPlan:
    """What strace injects to kill a start at one store write: `inject=SYSCALL:signal=KILL:when=WHEN`."""

    syscall: str
    when: int
    paths: tuple[str, ...]  # every store path the recording saw, relative to the work dir
    # The aimed call's own files, and its number among its thread's calls of `syscall` to them: the write
    # gate checks the kill lands there (a file named otherwise on this start moves strace's count elsewhere).
    target: tuple[str, ...] = ()
    on_target: int = 0
    any_thread: bool = False  # `when` counts every thread's calls naming `target` (faults/file_aims.py)
    like: tuple[str, ...] = ()  # and those naming a file these patterns match: `target`'s temporary files (into:)

    def absolute_paths(self, values: Mapping[str, str]) -> list[str]:
        """The `-P` arguments of one start: strace matches them literally, so they must be absolute."""
        work_dir = values["work_dir"]
        return [os.path.join(work_dir, p) if p else work_dir for p in self.paths]

    def absolute_target(self, values: Mapping[str, str]) -> list[str]:
        work_dir = values["work_dir"]
        return [os.path.join(work_dir, p) if p else work_dir for p in self.target]


@dataclass(frozen=True)
class Recording:
    """A start's store writes and request sends, in the order strace saw them."""

    events: tuple[tuple[str, int], ...]  # ("write", index into calls) or ("request", its 1-based number)
    calls: tuple[StoreCall, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(sorted({p for call in self.calls for p in call.paths}))

    def landing(self, call: StoreCall) -> int:
        """The 1-based index of the write strace kills at with this call's (syscall, count): the first to reach it."""
        return next(i for i, c in enumerate(self.calls, 1) if c.syscall == call.syscall and c.count == call.count)

    def plan_for_write(self, n: int) -> InjectionPlan | None:
        """The plan for the n-th store write; None when the start makes fewer. ValueError: strace cannot reach it."""
        if n > len(self.calls):
            return None
        call = self.calls[n - 1]
        landed = self.landing(call)
        if landed != n:
            raise ValueError(f"store write {n} is {call.syscall} number {call.count} of its thread, but another"
                             f" thread or process reaches its own {call.syscall} number {call.count} first (write"
                             f" {landed}); strace counts per thread")
        mine = (call.tid, call.syscall, call.paths)
        on_target = sum(1 for c in self.calls[:n] if (c.tid, c.syscall, c.paths) == mine)
        return InjectionPlan(call.syscall, call.count, self.paths, call.paths, on_target)

    def write_after_request(self, k: int) -> int | None:
        """The 1-based index of the first store write after the k-th request was sent (so after its answer
        was read, for a scraper that waits for each answer); None when there is none."""
        seen = False
        for kind, value in self.events:
            if kind == "request" and value == k:
                seen = True
            elif kind == "write" and seen:
                return value + 1
        return None

    def describe_write(self, n: int) -> tuple[str, str]:
        """The n-th store write in the user's terms and the kind of place it is, e.g. ("the 2nd write to
        dataset/000001.json, 31 bytes at offset 30", "write to dataset/N.json"): its system call, its count
        among that call's calls to that file, and the bytes a write asked for. ("", "") past the last write."""
        if not 1 <= n <= len(self.calls):
            return "", ""
        call = self.calls[n - 1]
        target = " to ".join(p or "the work dir" for p in call.paths) or "the store"
        same = sum(1 for c in self.calls[:n] if c.syscall == call.syscall and c.paths == call.paths)
        kind = f"{call.syscall} {'of' if call.syscall in _OF else 'to'}"
        words = f"the {_nth(same)} {kind} {target}"
        if call.size is not None:
            words += f", {call.size} byte{'s' if call.size != 1 else ''}"
            words += f" at offset {call.offset}" if call.offset is not None else ""
        return words, f"{kind} {folded(TEMPORARY.sub('N', target))}"  # numbers folded, a name's words kept

    def logical_write(self, n: int) -> tuple[int, int]:
        """The first and last n (1-based) of the logical write that holds the n-th store write: the writes a
        buffered stream made one after another on one open file, nothing between them (`StoreCall.goes_on`).
        A kill before any of them but the first tears that one write apart; (n, n) for a write of its own."""
        if not 1 <= n <= len(self.calls):
            return n, n
        first, last = n, n
        while self.calls[first - 1].goes_on:
            first -= 1
        while last < len(self.calls) and self.calls[last].goes_on:
            last += 1
        return first, last

    def reachable_writes(self) -> list[int]:
        """Every n whose plan strace can carry out: the first write to reach its (syscall, count)."""
        first: dict[tuple[str, int], int] = {}
        for n, call in enumerate(self.calls, 1):
            first.setdefault((call.syscall, call.count), n)
        return list(first.values())


def agreeing_writes(first: Recording, second: Recording) -> list[int]:
    """The n (1-based) whose write is the same on both recordings of a start: strace reaches it on both,
    with the same aim (system call, per-thread count, file: `StoreCall.aim`), after the same writes (the
    same calls, counted the same, in whatever order the start's threads made them). A file's name may
    differ before it (a temporary file named by pid or at random), except in a call strace counts toward
    it, of its system call: the kill's `-P` paths, taken from one recording, would miss it on another.
    Such a `w<n>` names the same write whichever recording aims it."""
    reachable = set(first.reachable_writes()) & set(second.reachable_writes())
    calls: Counter[tuple[str, int]] = Counter()  # the writes before n: first's minus second's
    files: Counter[tuple[str, int, tuple[str, ...]]] = Counter()  # the same, with their files
    uneven_calls, uneven_files = 0, Counter[str]()  # how many keys are not zero (by system call: files)
    agreed = []
    for n, (one, other) in enumerate(zip(first.calls, second.calls), 1):
        if n in reachable and one.aim == other.aim and uneven_calls == 0 and uneven_files[one.syscall] == 0:
            agreed.append(n)
        for call, step in ((one, 1), (other, -1)):
            uneven_calls += _add(calls, (call.syscall, call.count), step)
            uneven_files[call.syscall] += _add(files, call.aim, step)
    return agreed


def _add(balance: Counter, key: object, step: int) -> int:
    """Add `step` at `key`; how many more keys are not zero (-1, 0 or 1)."""
    before = balance[key]
    balance[key] += step
    return (balance[key] != 0) - (before != 0)


# Node.js makes its asynchronous file writes (fs.promises, fs.writeFile: Crawlee's dataset and request queue)
# on libuv's thread pool, four threads by default, and which thread takes a write is a race: strace's count
# per thread then names another write on every recording, and explore found none of them to offer. With one
# pool thread the writes keep the order the program asked for them in, on one thread, and are counted alike
# on every start. The recording and the write gate's start set it (a design's own value is kept); it changes
# no program's results, only how many of libuv's file operations run at once.
POOL_VARIABLE, POOL_THREADS = "UV_THREADPOOL_SIZE", "1"
ONE_POOL_THREAD = ("sh", "-c", f'export {POOL_VARIABLE}="${{{POOL_VARIABLE}:-{POOL_THREADS}}}"; exec "$@"', "sh")


def recording_prefix(log_path: str) -> tuple[str, ...]:
    """strace, recording every write and send of the start and its children, with file and socket names; libuv's
    thread pool of one thread (`ONE_POOL_THREAD`), as the write gate's start has it."""
    return (*ONE_POOL_THREAD, "strace", "-f", "-q", "-yy", "-s", "24", "--seccomp-bpf", "-o", log_path,
            "-e", f"trace={','.join(WRITE_SYSCALLS + SEND_SYSCALLS + CLOSE_SYSCALLS)}", "--")


def parse_recording(text: str, values: Mapping[str, str]) -> Recording:
    """The store writes (calls to files under the work dir or the store path) and the requests of one log."""
    work_dir, store = values["work_dir"].rstrip("/"), values.get("store", "")
    events: list[tuple[str, int]] = []
    calls: list[StoreCall] = []
    counts: dict[tuple[int, str], int] = {}
    requests = 0
    stream: tuple[int, int, str] | None = None  # (tid, fd, path) of a stream write nothing has come after yet
    for line in text.splitlines():
        found = _LINE.match(line)
        if found is None or "resumed>" in line:
            continue
        tid, name, args = int(found["tid"]), found["name"], found["args"]
        if name in CLOSE_SYSCALLS:
            closed = _FD_PATH.match(args)
            if stream is not None and closed is not None and (_fd(args), closed["path"]) == stream[1:]:
                stream = None
            continue
        if name in SEND_SYSCALLS or name in ("write", "writev"):
            if _sends_request(args):
                requests += 1
                events.append(("request", requests))
                stream = None
                continue
        if name not in WRITE_SYSCALLS:
            continue
        paths = tuple(p for p in _paths(name, args) if _in_store(p, work_dir, store))
        if not paths:
            continue
        counts[(tid, name)] = counts.get((tid, name), 0) + 1
        events.append(("write", len(calls)))
        sized = _SIZE.search(args) if name in ("write", "pwrite64") else None
        fd = None if name in PATH_SYSCALLS else _fd(args)
        here = (tid, fd, paths[0]) if name in STREAM_WRITES and fd is not None else None
        calls.append(StoreCall(tid, name, tuple(_relative(p, work_dir) for p in paths), counts[(tid, name)],
                               size=int(sized["size"]) if sized else None,
                               offset=int(sized["offset"]) if sized and sized["offset"] else None,
                               fd=fd, goes_on=here is not None and here == stream))
        stream = here
    return Recording(tuple(events), tuple(calls))


_OF = set(WRITE_SYSCALLS) - {"write", "pwrite64", "writev", "pwritev", "pwritev2"}  # "the 1st fsync of FILE"


def _nth(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _sends_request(args: str) -> bool:
    fd = _FD_PATH.match(args)
    if fd is None or not fd["path"].startswith(("TCP:", "TCPv6:")):
        return False
    data = _QUOTED.search(args)
    if data is None or not data.group(1).startswith(HTTP_METHODS):
        return False
    # Counted as the site's request hooks count (fixture_site/app.py): a browser's icon is not the design's
    # request; the shop's images and webhooks, which the design asks for, are. The log shows a request's first
    # bytes only (`-s 24`): its path, not its headers, so a page's scripts and stylesheets, which only
    # Sec-Fetch-Dest tells, are counted here; a shop page has none.
    path = data.group(1).split(" ")[1] if data.group(1).count(" ") >= 1 else ""
    return not browser_initiated(path)


def _paths(name: str, args: str) -> list[str]:
    if name in PATH_SYSCALLS:
        # Only the quoted path arguments: a directory fd's annotation (AT_FDCWD</dir>) is not what -P matches.
        return [_unescape(m.group(1)) for m in _QUOTED.finditer(args)]
    fd = _FD_PATH.match(args)
    return [fd["path"]] if fd is not None else []


def _fd(args: str) -> int | None:
    """The file descriptor a call's first argument names (`3</path>`), None when it names none."""
    number = re.match(r"\s*(-?\d+)<", args)
    return int(number[1]) if number else None


def _in_store(path: str, work_dir: str, store: str) -> bool:
    if path == work_dir:
        return True  # a directory fsync after a create or a rename: part of the commit
    if path.startswith(work_dir + "/"):
        return HARNESS_FILE.match(path[len(work_dir) + 1:]) is None
    return bool(store) and path.startswith(store)


def _relative(path: str, work_dir: str) -> str:
    if path == work_dir:
        return ""
    return path[len(work_dir) + 1:] if path.startswith(work_dir + "/") else path


def _unescape(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\")
