"""The source location of a store write in a Python program: file, line and function, found without changing
the program, while its start is held at that very write.

A `w<n>` point's start runs under the write gate (harness/faults/write_gate.py), whose strace holds the
writing thread in the system call's entry. With KILLTEST_LOCATE_TO set, the gate runs `py-spy dump
--nonblocking` on the held process before the kill: py-spy reads the interpreter's frames from the
process's memory (process_vm_readv) without attaching, which matters because strace already traces it
and a process has one tracer. The innermost frame outside Python's own library is the program's line
that made the write (a `f.flush()` or the `with` block's end, where a buffered write really happens).

Why py-spy: it reads any CPython 3.x from outside, with no change to the program and no import in it; a
Python-level tracer (sys.settrace, the line points' way) would see lines, not system calls. It is the
optional `locate` extra: without it, one line says so.

A command's program is its first word, or the one `env` runs past its options and NAME=VALUE assignments
(faults/write_gate.program_at). A Node.js command's held start runs as `node --perf-basic-prof
--interpreted-frames-native-stack ...` (that start only; the program is unchanged; faults/write_gate.py adds
the flags after `node`, wherever it stands): V8 maps every
function's code, interpreted ones included, in /tmp/perf-<pid>.map, and faults/node_stack.py matches
the held thread's stack words against it (the map is deleted before the kill). V8's map names a
function by where it starts, so the line is the function's first line, not the write's own: `in
saveRecord (/app/app.cjs:3, the function's first line)`, or `in the module's top level
(/app/app.mjs)`. An asynchronous fs call writes from libuv's worker thread, which holds no
JavaScript frame: one line says so.

Each distinct failure's first point is run once more for this, as the exploration goes (`Locator`): right
after a store-write point breaks a promise with findings, at a kind of place, that no earlier point did, in
the same process and stage (with -j N, in the job that found it; the jobs share what they claimed), whose
recording has aimed the point already. So the locating runs in parallel with -j, needs no recording and no
site of its own, and its time is part of the exploration's. At most MAX_LOCATED kinds of failure a process
are located; one line says so past that.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import sysconfig
import time
from collections.abc import Callable
from typing import Any

from killtest.harness import lifeline
from killtest.harness.design.model import Design, Launch
from killtest.harness.faults.points import KillPoint
from killtest.harness.faults.points.store_write import AtStoreWrite, server_store
from killtest.harness.faults.write_gate import program_at

MAX_LOCATED = 10  # kinds of failure a process locates: each costs one more run
_FRAME = re.compile(r"^\s+(?P<function>\S+) \((?P<file>[^)]+):(?P<line>\d+)\)$")
# V8's perf map: `JS:~saveRecord /app/app.cjs:3:20` (`~` interpreted, `^` baseline, `+` maglev, `*` optimized)
_JS_FRAME = re.compile(r"^(?:JS|Script|Eval|Function|LazyCompile):[~^+*]?(?:(?P<function>.*?) )?"
                       r"(?P<file>(?:/|file://)[^ ]+):(?P<line>\d+):(?P<column>\d+)$")
NO_JS_FRAME = ("no source location: no JavaScript frame of the program on the writing thread's stack"
               " (as when an asynchronous fs call writes from libuv's worker thread)")
LIBRARY = tuple({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"], "/usr/lib/python3"})


def py_spy() -> str | None:
    """py-spy on the PATH or beside this interpreter (a virtual environment's bin/)."""
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return shutil.which("py-spy") or (beside if os.access(beside, os.X_OK) else None)


def language(design: Design) -> str:
    """`python`, `node` or `other`: what a design's starts run, read from its command's program (its first
    word, or the first past `env`, its options and NAME=VALUE assignments: faults/write_gate.program_at) with
    the placeholders filled in, as a start sees it (`{python}` is killtest's own interpreter)."""
    if design.module is not None:
        return "python"
    at = program_at(design.command_template)
    first = design.command_template[at].format_map(design.values(Launch("", "", 0.0))) if at is not None else ""
    program = os.path.basename(first)
    return "python" if program.startswith("python") else "node" if program in ("node", "nodejs") else "other"


def why_not(design: Design) -> str | None:
    """The one line that says why no location can be had; None when it can."""
    kind = language(design)
    if kind not in ("python", "node"):
        return "no source location: not a Python or Node.js program"
    if server_store(design):
        return "no source location: a server's statement is counted by a proxy, not held in the program"
    if kind == "python" and py_spy() is None:
        return "no source location: py-spy is not installed (pip install 'killtest[locate]')"
    return None


def innermost(dump: str) -> str | None:
    """`function (file:line)` of the innermost frame outside Python's library in a py-spy dump."""
    for line in dump.splitlines():
        found = _FRAME.match(line)
        if found and not found["file"].startswith(LIBRARY) and "/site-packages/" not in found["file"]:
            return f"{found['function']} ({found['file']}:{found['line']})"
    return None


def innermost_js(frames: str) -> str | None:
    """`function (file:line, the function's first line)` of the innermost frame in the program's own files
    among node_stack.py's lines (not Node's `node:` modules, not node_modules)."""
    for line in frames.splitlines():
        found = _JS_FRAME.match(line)
        if found and "/node_modules/" not in found["file"]:
            where = found["file"].removeprefix("file://")
            if not found["function"] and (found["line"], found["column"]) == ("1", "1"):
                return f"the module's top level ({where})"  # a CommonJS wrapper or an ES module's body
            return f"{found['function'] or '(anonymous)'} ({where}:{found['line']}, the function's first line)"
    return None


class Locator:
    """As an exploration goes: the source location of the store write of each kind of failure's first point
    (or the one line of `why_not`), by point, in `found`; `with_locations` puts them in the outcomes' words.

    `claims` (a dict shared by -j's processes, parallel.run_jobs) holds the earliest point of each kind that a
    process is locating: another process skips a later point of that kind, and still locates an earlier one
    (the earliest of all is the one whose words keep the location)."""

    def __init__(self, design: Design, claims: Any = None, most: int = MAX_LOCATED) -> None:
        self.design, self.most, self.reason = design, most, why_not(design)
        self.claims: Any = {} if claims is None else claims
        self.found: dict[str, str] = {}
        self.runs, self.spent_s, self.kinds = 0, 0.0, 0

    def after(self, index: int, point: KillPoint, outcome: Any, run_again: Callable[[], object]) -> None:
        """After `point` (the `index`-th of the exploration) ran: when it broke a promise at a store write in a
        way no earlier point did, locate the write by `run_again()`, one more run of the same point while its
        held start's stack is read."""
        if outcome.valid or not isinstance(point, AtStoreWrite):
            return
        key = repr((tuple(outcome.findings), outcome.place))
        if self.claims.get(key, index + 1) <= index:
            return  # an earlier point of this kind is located (or being located)
        self.claims[key] = index
        self.kinds += 1
        if self.reason is not None:
            self.found[point.spec] = self.reason
        elif self.kinds > self.most:
            self.found[point.spec] = (f"no source location: only the first {self.most} kinds of failure are"
                                      " located, each one more run")
        else:
            began = time.monotonic()
            self.found[point.spec] = located(self.design, run_again)
            self.runs, self.spent_s = self.runs + 1, self.spent_s + time.monotonic() - began


def with_locations(outcomes: list, found: dict[str, str]) -> None:
    """Each kind of failure's first point's words (campaigns/exploration.PointOutcome.where) end with its
    location in `found`. With -j N each process locates the first it met of each kind: the first of all is
    one of them, and only its location is kept, so the words are those of -j 1."""
    seen: set[tuple] = set()
    for outcome in outcomes:
        key = (tuple(outcome.findings), outcome.place)
        if outcome.point in found and key not in seen:
            seen.add(key)
            outcome.where = f"{outcome.where}, {found[outcome.point]}"


def located(design: Design, run_again: Callable[[], object]) -> str:
    """`in FUNCTION (FILE:LINE)` of the store write `run_again()` holds its start at, read from outside."""
    node = language(design) == "node"
    with lifeline.temp_dir(prefix="killtest-locate-") as dumps:
        path = os.path.join(dumps, "stack.txt")
        os.environ.update(KILLTEST_LOCATE_TO=path, KILLTEST_PY_SPY=py_spy() or "py-spy",
                          KILLTEST_LOCATE_NODE="1" if node else "")
        try:
            run_again()
        finally:
            for name in ("KILLTEST_LOCATE_TO", "KILLTEST_PY_SPY", "KILLTEST_LOCATE_NODE"):
                os.environ.pop(name, None)
        dump = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    frame = innermost_js(dump) if node else innermost(dump)
    if frame:
        return f"in {frame}"
    return NO_JS_FRAME if node else "no source location: py-spy found no frame of the program"
