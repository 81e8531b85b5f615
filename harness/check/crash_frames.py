"""Where a program failed, in its own code: the frame of the crawler's own nearest the failing operation, read from
the traceback a crashed start printed (Python) or its stack (Node.js), and the same rule for a held write's stack.

A user reading "at crawler.py:88" must find the line that matters: the `json.load` of a torn state file, the write
a kill tore, never `sys.exit(asyncio.run(main()))`, the entry point every frame of the program passes through.
A Python traceback follows an exception through every coroutine that awaited it (asyncio's own frames between
them are the library's, skipped), so the innermost of the program's own frames is the coroutine that made the
failing call. An own frame is one outside Python's library and outside an installed package (site-packages,
node_modules); the module's top level (`<module>`) is no nearer frame when an installed package's frame lies
between it and the failure: the framework made the call, and the entry point only started it (then the
framework's frame is the line, as it is when the program has no frame of its own at all).

Pure: lines in, a `FILE:LINE` out. Nothing is read but the interpreter's own paths (sysconfig).
"""

from __future__ import annotations

import re
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass

LIBRARY = tuple({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"], "/usr/lib/python3"})
INSTALLED = ("/site-packages/", "/dist-packages/", "/node_modules/")  # a framework's frames, not the program's
ENTRY = "<module>"  # a Python module's top level: the entry point of a script

_PY_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+?)\s*$')
_PY_START = re.compile(r"^\s*Traceback \(most recent call last\):\s*$")
# Node.js: `at loadState (/app/crawler.mjs:12:5)`, `at async main (file:///app/x.mjs:3:1)`, `at /app/x.js:9:2`
_JS_FRAME = re.compile(r"^\s*at (?:(?:async )?(?P<function>.+?) \()?(?P<file>(?:/|file://|node:)[^()\s]+?)"
                       r":(?P<line>\d+):\d+\)?\s*$")


@dataclass(frozen=True)
class Frame:
    """One frame: the function, its file and line."""

    function: str
    path: str
    line: int

    @property
    def at(self) -> str:
        return f"{self.path}:{self.line}"


def library(path: str) -> bool:
    """Python's own library, Node.js' built-in modules, or a frozen or generated module (`<frozen runpy>`,
    `<string>`). An installed package is not: a virtual environment's platstdlib is its own lib/pythonX.Y, which
    holds site-packages."""
    return (path.startswith(("<", "node:")) or
            (path.startswith(LIBRARY) and not any(part in path for part in INSTALLED)))


def own(path: str) -> bool:
    """A frame of the user's own program: not Python's or Node.js' library, not an installed package."""
    return not library(path) and not any(part in path for part in INSTALLED)


def python_frames(lines: Sequence[str]) -> list[Frame]:
    """The frames of the last traceback in `lines` (the exception that ended the program), the innermost first."""
    starts = [i for i, line in enumerate(lines) if _PY_START.match(line)]
    frames = [Frame(found["function"], found["file"], int(found["line"]))
              for line in lines[starts[-1] if starts else 0:] if (found := _PY_FRAME.match(line))]
    return frames[::-1]


def node_frames(lines: Sequence[str]) -> list[Frame]:
    """The frames of the first stack in `lines` (Node.js prints the thrown error's, the innermost first)."""
    frames: list[Frame] = []
    for line in lines:
        found = _JS_FRAME.match(line)
        if found:
            frames.append(Frame(found["function"] or "(anonymous)", found["file"].removeprefix("file://"),
                                int(found["line"])))
        elif frames:
            break  # the stack ended: a later one is another error's (a `cause`)
    return frames


def nearest_own(frames: Sequence[Frame]) -> Frame | None:
    """The frame a failure is at, from frames the innermost first: the program's own nearest the failing call,
    where an entry point (`<module>`) beyond an installed package's frame does not count; else the installed
    package's innermost frame (the framework made the call); None when every frame is the library's."""
    outside = [f for f in frames if not library(f.path)]
    for i, frame in enumerate(outside):
        if own(frame.path):
            if frame.function == ENTRY and any(not own(f.path) for f in outside[:i]):
                continue  # the script's top level started what the framework did: not the line that matters
            return frame
    return outside[0] if outside else None


def failed_at(lines: Sequence[str]) -> Frame | None:
    """Where a crashed start failed, from what it wrote to stderr: its Python traceback's frame, else its
    Node.js stack's (`nearest_own`); None when it printed neither."""
    return nearest_own(python_frames(lines)) or nearest_own(node_frames(lines))
