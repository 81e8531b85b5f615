"""The source location of a store write in a Python program: file, line and function, found without changing the
program, while its start is held at that very write.

A `w<n>` point's start runs under the write gate (harness/faults/write_gate.py), whose strace holds the writing
thread in the system call's entry. With KILLTEST_LOCATE_TO set, the gate runs `py-spy dump --nonblocking` on the
held process before the kill: py-spy reads the interpreter's frames from the process's memory (process_vm_readv)
without attaching (strace already traces it, and a process has one tracer). The innermost frame outside Python's own
library is the program's line that made the write (a `f.flush()` or a `with` block's end, where a write happens).
Why py-spy: it reads any CPython 3.x from outside, with no change to the program; a Python-level tracer (the line
points' way) would see lines, not system calls. It is the optional `locate` extra: without it, one line says so.

A command's program is its first word, or the one `env` runs past its options and NAME=VALUE assignments
(faults/write_gate.program_at). A Node.js command's held start runs as `node --perf-basic-prof
--interpreted-frames-native-stack ...` (that start only; faults/write_gate.py adds the flags after `node`): V8 maps
every function's code in /tmp/perf-<pid>.map, and faults/node_stack.py matches the held thread's stack words against
it (the map is deleted before the kill). V8's map names a function by where it starts: `in saveRecord
(/app/app.cjs:3, the function's first line)`, or `in the module's top level (/app/app.mjs)`. An asynchronous fs call
writes from libuv's worker thread, which holds no JavaScript frame: one line says so.

An exploration locates each kind of failure as it goes (campaigns/locator.py); a fuzzed schedule's kills at store
writes are read in its own run, one dump a kill (campaigns/fuzz_locate.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import sysconfig
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from killtest.harness import lifeline
from killtest.harness.check.crash_frames import ENTRY, INSTALLED
from killtest.harness.design.model import Design, Launch
from killtest.harness.faults.node_stack import NO_JS_FRAME, OFF_MAIN, OFF_MAIN_THREAD
from killtest.harness.faults.points.store_write import server_store
from killtest.harness.faults.write_gate import program_at

_FRAME = re.compile(r"^\s+(?P<function>\S+) \((?P<file>[^)]+):(?P<line>\d+)\)$")
# V8's perf map: `JS:~saveRecord /app/app.cjs:3:20` (`~` interpreted, `^` baseline, `+` maglev, `*` optimized)
_JS_FRAME = re.compile(r"^(?:JS|Script|Eval|Function|LazyCompile):[~^+*]?(?:(?P<function>.*?) )?"
                       r"(?P<file>(?:/|file://)[^ ]+):(?P<line>\d+):(?P<column>\d+)$")
LIBRARY = tuple({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"], "/usr/lib/python3"})
_HELD = re.compile(r"^# held thread (\d+)$", re.M)
_READ_IN = re.compile(r"^# read in ([\d.]+) s$", re.M)  # what faults/write_gate.locate appends to a dump
_INSTALLED = INSTALLED  # a framework's frames, not the program's
_EVENT_LOOP = "/asyncio/events.py"  # a Handle's `_run`: the event loop calling a task's step or a callback


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
        return "no source location: py-spy is not installed (pip install py-spy)"
    return None


@dataclass(frozen=True)
class Located:
    """Where a held store write was made: `words` for the user (`in save (/home/me/scraper.py:40)`, with the
    framework's frame first when a framework made the write), and `line`, the `FILE:LINE` of the program's
    own nearest frame that failures are grouped by ("" when none was found)."""

    words: str
    line: str = ""
    own: str = ""  # the program's own frame in words (`save (/home/me/scraper.py:40)`), "" when none


def _own(path: str) -> bool:
    """A frame of the user's own program: not Python's library, not an installed package, not node_modules."""
    return not _stdlib(path) and not any(part in path for part in _INSTALLED)


def _stdlib(path: str) -> bool:
    """Python's own library, or a frozen or generated module (`<frozen runpy>`, `<string>`). An installed
    package is not: a virtual environment's platstdlib is its own lib/pythonX.Y, which holds site-packages."""
    return path.startswith("<") or (path.startswith(LIBRARY) and not any(part in path for part in _INSTALLED))


def held_thread(dump: str) -> str:
    """The frames of the thread the write gate held (`# held thread TID`, faults/write_gate.locate) in a py-spy
    dump of every thread; the whole dump when it does not say."""
    tid = _HELD.search(dump)
    if tid is None:
        return dump
    block = re.search(rf"^Thread {tid[1]} .*?(?=^Thread |^# |\Z)", dump, re.M | re.S)
    return block[0] if block else dump


def frames_located(dump: str) -> Located | None:
    """The program's own innermost frame in a py-spy dump, and the framework's frame that made the write when
    the write came from an installed package (Scrapy's exporter, a Crawlee storage client) below it. Only the
    running task's frames count: py-spy sees an asyncio program's awaiting coroutines only while they run, so the
    frames past the event loop's callback (`_run` in asyncio/events.py) merely started the loop (`asyncio.run(main())`)
    and are never the write's caller."""
    frames = [(found["function"], found["file"], found["line"]) for line in held_thread(dump).splitlines()
              if (found := _FRAME.match(line))]
    loop = next((i for i, f in enumerate(frames) if f[0].rpartition(".")[2] == "_run" and f[1].endswith(_EVENT_LOOP)),
                len(frames))
    return _named([f for f in frames[:loop] if not _stdlib(f[1])], lambda f: f"{f[0]} ({f[1]}:{f[2]})")


def innermost(dump: str) -> str | None:
    """`function (file:line)` of the innermost frame of the program's own in a py-spy dump."""
    found = frames_located(dump)
    return found.own if found and found.own else None


def js_located(frames: str) -> Located | None:
    """As `frames_located`, for node_stack.py's lines: the program's own files (not Node's `node:` modules, not
    node_modules); V8 names a function by its first line."""
    found = []
    for line in frames.splitlines():
        match = _JS_FRAME.match(line)
        if match and not match["file"].startswith("node:"):
            top = not match["function"] and (match["line"], match["column"]) == ("1", "1")
            found.append(("" if top else match["function"] or "(anonymous)", match["file"].removeprefix("file://"),
                          match["line"]))

    def words(frame: tuple[str, str, str]) -> str:
        function, where, line = frame
        if not function:
            return f"the module's top level ({where})"  # a CommonJS wrapper or an ES module's body
        return f"{function} ({where}:{line}, the function's first line)"
    return _named(found, words) or (Located(OFF_MAIN_THREAD) if OFF_MAIN in frames else None)  # node_stack.py


def innermost_js(frames: str) -> str | None:
    """`function (file:line, the function's first line)` of the innermost frame in the program's own files."""
    found = js_located(frames)
    return found.own if found and found.own else None


def _named(frames: list[tuple[str, str, str]], words: Callable[[tuple[str, str, str]], str]) -> Located | None:
    """Located from frames outside the language's own library, the innermost first: the nearest own frame,
    after the framework's frame of the write when an installed package's frame is the innermost."""
    framework = frames[0] if frames and not _own(frames[0][1]) else None
    # A script's top level (`<module>`, or a JavaScript module's body) beyond the framework's frame only started
    # what made the write: not the line that matters (check/crash_frames.nearest_own says the same of a crash).
    own = next((f for f in frames if _own(f[1]) and not (framework and f[0] in (ENTRY, ""))), None)
    if own is None:
        if framework is None:
            return None
        return Located(f"in {words(framework)}, the framework's frame; no frame of the program's own on the stack",
                       f"{framework[1]}:{framework[2]}")
    line = f"{own[1]}:{own[2]}"
    if framework is None:
        return Located(f"in {words(own)}", line, words(own))
    return Located(f"in {words(framework)}, the framework's frame of the write, called from {words(own)}", line,
                   words(own))


def with_locations(outcomes: list, found: dict[str, str], lines: dict[str, str] | None = None) -> None:
    """A kind of failure's (findings, kind of place) first located point's words (exploration.PointOutcome.where),
    and any other's whose line differs, end with its location in `found`; each located point keeps its `line` (in
    `lines`), what failures are grouped by. The kind's other points take the line only when all its located points
    (first, last: `Locator.finish`) name one; else two bugs share the kind and its others keep no line."""
    kinds: dict[tuple, list] = {}
    for outcome in outcomes:
        if not outcome.valid:
            kinds.setdefault((tuple(outcome.findings), outcome.place), []).append(outcome)
    lines = lines or {}
    for same in kinds.values():
        located = [outcome for outcome in same if outcome.point in found]
        for outcome in located:
            if outcome is located[0] or lines.get(outcome.point, "") != lines.get(located[0].point, ""):
                outcome.where = f"{outcome.where}, {found[outcome.point]}"
            outcome.line = outcome.line or lines.get(outcome.point, "")
        named = {lines.get(outcome.point, "") for outcome in located}
        if len(named) == 1 and (line := named.pop()):
            for outcome in same:
                outcome.line = outcome.line or line


def located(design: Design, run_again: Callable[[], object]) -> Located:
    """`in FUNCTION (FILE:LINE)` of the store write `run_again()` holds its start at, read from outside."""
    with stack_reads(design) as read:
        run_again()
    return [None, *read()[0]][-1] or Located(NO_JS_FRAME if language(design) == "node"
                                             else "no source location: py-spy found no frame of the program")


@contextlib.contextmanager
def stack_reads(design: Design) -> Iterator[Callable[[], tuple[list[Located | None], float]]]:
    """Within it, each start held at a store write has its stack read before the kill (faults/write_gate.locate
    appends a dump a kill); the callable it yields gives, afterwards, where each write was made (None when no frame
    was found), in the kills' order, and the seconds reading them took."""
    with lifeline.temp_dir(prefix="killtest-locate-") as dumps:
        path, node = os.path.join(dumps, "stack.txt"), language(design) == "node"
        os.environ.update(KILLTEST_LOCATE_TO=path, KILLTEST_PY_SPY=py_spy() or "py-spy",
                          KILLTEST_LOCATE_NODE="1" if node else "")
        try:
            yield lambda: _read_dumps(text, node)
        finally:
            for name in ("KILLTEST_LOCATE_TO", "KILLTEST_PY_SPY", "KILLTEST_LOCATE_NODE"):
                os.environ.pop(name, None)
            text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""


def _read_dumps(text: str, node: bool) -> tuple[list[Located | None], float]:
    dumps = re.findall(r".*?^# held thread \d+$", text, flags=re.M | re.S) or ([text] if text.strip() else [])
    seconds = sum(float(found[1]) for found in _READ_IN.finditer(text))
    return [js_located(dump) if node else frames_located(dump) for dump in dumps], seconds
