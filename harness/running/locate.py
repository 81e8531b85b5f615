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

A Node.js command's held start runs as `node --perf-basic-prof --interpreted-frames-native-stack ...`
(that start only; the program is unchanged; faults/write_gate.py adds the flags): V8 maps every
function's code, interpreted ones included, in /tmp/perf-<pid>.map, and faults/node_stack.py matches
the held thread's stack words against it (the map is deleted before the kill). V8's map names a
function by where it starts, so the line is the function's first line, not the write's own: `in
saveRecord (/app/app.cjs:3, the function's first line)`, or `in the module's top level
(/app/app.mjs)`. An asynchronous fs call writes from libuv's worker thread, which holds no
JavaScript frame: one line says so.

Each distinct failure's example point is run once more for this, after the exploration.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import sysconfig

from killtest.fixture_site.catalog import Catalog
from killtest.harness import lifeline
from killtest.harness.design.model import Design, Launch
from killtest.harness.faults.points import parse_point
from killtest.harness.faults.points.store_write import AtStoreWrite, server_store
from killtest.harness.running.exploration import explore_point
from killtest.harness.running.orchestrator import stage
from killtest.harness.running.runner import RunSettings

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
    """`python`, `node` or `other`: what a design's starts run, read from its command's first word with the
    placeholders filled in, as a start sees it (`{python}` is killtest's own interpreter)."""
    if design.module is not None:
        return "python"
    first = design.command_template[0].format_map(design.values(Launch("", "", 0.0))) if design.command_template else ""
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


def locate_writes(design: Design, catalog: Catalog, settings: RunSettings, points: list[str],
                  work_dir: str | None = None) -> dict[str, str]:
    """`in FUNCTION (FILE:LINE)` for each store-write point of `points` (or the one line of `why_not`)."""
    writes = [p for p in points if isinstance(parse_point(p, design), AtStoreWrite)]
    if not writes:
        return {}
    reason = why_not(design)
    if reason is not None:
        return dict.fromkeys(writes, reason)
    found: dict[str, str] = {}
    with lifeline.temp_dir(prefix="killtest-locate-") as dumps, stage(catalog, [design], prefork=False) as on:
        cache: dict = {}
        for number, spec in enumerate(writes):
            path = os.path.join(dumps, f"{number}.txt")
            node = language(design) == "node"
            os.environ.update(KILLTEST_LOCATE_TO=path, KILLTEST_PY_SPY=py_spy() or "py-spy",
                              KILLTEST_LOCATE_NODE="1" if node else "")
            try:
                explore_point(design, on, settings, parse_point(spec, design), work_dir, cache)
            finally:
                for name in ("KILLTEST_LOCATE_TO", "KILLTEST_PY_SPY", "KILLTEST_LOCATE_NODE"):
                    os.environ.pop(name, None)
            dump = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
            frame = innermost_js(dump) if node else innermost(dump)
            found[spec] = f"in {frame}" if frame else (NO_JS_FRAME if node else
                                                       "no source location: py-spy found no frame of the program")
    return found
