"""The one line of a crashed start's stderr that says why it crashed: what the `crashed` finding and the
runner's "exited before its first request" line quote, out of the few last lines the history keeps.

Pure functions of those lines: a Python traceback ends with its error, but Node.js may end with its
version line, inside a stack, or with the properties an error carries, and its error stands above them.
"""

from __future__ import annotations

import re

# A line that names an error: Python's `ValueError: ...`, Node.js' `SyntaxError: ...`, Java's `...Exception`.
ERROR_LINE = re.compile(r"\s*[\w.]*(Error|Exception)\b")
FRAME = re.compile(r"\s*at ")


def quoted(text: str) -> str:
    """`text` as a Markdown code span, whatever it holds: a crawler's own words (`********** feapder end
    **********`, a line with backticks) are shown as they are, never read as emphasis, code or a link, in the
    Markdown and on the page (report/inline.py). The fence is one backtick longer than the longest run in the
    text, padded with a space where the text begins or ends with one (CommonMark's rule)."""
    runs = [len(run) for run in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def complaint(tail: list[str]) -> str:
    """The line of a crashed start's stderr that says why: its last, unless the tail ends inside a stack
    (`    at ...`: Crawlee's `console.error(err); process.exit(1)`), with the properties of an error
    (`    at main (...) {`, `  code: 'E_X'`, `}`) or with Node.js' closing `Node.js v20.1.0` after one;
    then the error is the last line above that names one (`SyntaxError: ...`)."""
    node = len(tail) > 1 and re.fullmatch(r"Node\.js v[\d.]+", tail[-1].strip())
    body = tail[:-1] if node else tail
    owner = _without_properties(body)
    if owner is not None or node or FRAME.match(tail[-1]):
        body = body if owner is None else owner
        errors = [line for line in body if ERROR_LINE.match(line)]
        said = [line.strip() for line in body if line.strip()]
        return errors[-1].strip() if errors else (said or tail)[-1]
    return tail[-1]


def _without_properties(lines: list[str]) -> list[str] | None:
    """`lines` up to the error or stack frame whose properties they end with (Node.js prints an Error with
    properties as its stack, ` {` after the last frame, one indented line per property, then `}`); None
    when they do not end so. stderr_tail may have put the error line right above the properties."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    if len(lines) < 2 or lines[-1] != "}":
        return None
    at = len(lines) - 2  # back over the properties (nested ones are indented deeper) to what they belong to
    while at > 0 and lines[at].startswith("  ") and not (FRAME.match(lines[at]) and lines[at].endswith(" {")):
        at -= 1
    opener = lines[at]
    if FRAME.match(opener) and opener.endswith(" {") or ERROR_LINE.match(opener):
        return lines[:at] + [opener.removesuffix(" {")]
    return None
