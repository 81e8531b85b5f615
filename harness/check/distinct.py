"""Distinct failures: broken crash points grouped by what broke and where in the user's program, and the
words that say where a kill landed in the user's own terms.

A user who reads "102 broken crash points" cannot tell that there are two bugs. Hypothesis reports
each distinct failure once (by its exception and the line it was raised at) with its minimal example;
Antithesis by the property and where it failed. This module does the same for kill points: two broken
points are one failure when they broke the same promises with the same findings at the same line of the
user's own program (`line`: where a crashed start's traceback failed in its own code, else a located store
write's frame, or a line point's line). Which system call of
a commit the kill landed before is detail inside it (`by_place`), not a failure of its own: the user
cannot change SQLite's journal, only the line that commits. Two lines are merged only when they made the
pieces of one logical write (`write`: stream writes on one open file, nothing between them, no fsync, no
close: faults/store_writes.Recording.logical_write), which a kill between the pieces tore apart: a file
written in place by a `write` and the `with` block's end that writes the rest is one failure at both lines.
Two commits, or any two writes with a sync, a request or another file's write between, stay two. Where no
line is known, the kind of place stays the key: a store write's file (its numbers folded, so
`dataset/000001.json` and `dataset/000002.json` are one file of a kind) and system call, or a request for
the same kind of page. Each group is shown once, with how many points it covers (as ranges: `w51-w60`,
`w1-w115 every 3rd`), and its smallest and earliest point, whose replay line to print.

Pure: plain data in (point, findings, problems, where; a History for `timeline_events`), plain data out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from killtest.harness.check.findings import Finding
from killtest.harness.history import History

_TOKEN = re.compile(r"[A-Za-z0-9]+")
_NUMBER = re.compile(r"(?<![A-Za-z])\d+|\d+(?![A-Za-z])")  # digits not between two letters: not `crawl4ai`'s
_NUMBERED_POINT = re.compile(r"^(?P<kind>[a-z]+)(?P<n>\d+)$")  # r5, w12, xw12: the forms a range can hold


@dataclass(frozen=True)
class Broken:
    """One broken point (or fuzzed schedule): what grouping reads of it."""

    point: str  # the schedule's text: `w52`, or `r3,w9` for a fuzzed schedule
    findings: tuple[str, ...]  # finding codes (check/findings.py), in the verdict's order
    problems: tuple[str, ...]  # the verdict's one line per finding
    where: str = ""  # where the kill landed, in the user's terms ("before the 2nd write to ...")
    place: str = ""  # the kind of place, what grouping compares ("write to dataset/N.json"); "": the point's kind
    size: int = 0  # how big its case is (fuzz: points and products); smaller is shown first
    order: int = 0  # its place in the order the command tried them
    line: str = ""  # the user's own source line, `FILE:LINE`, where known (a located write, a line point)
    write: str = ""  # the logical write it landed inside (`w11-w12`), when that is made of several writes
    crash_line: str = ""  # where its crashed start failed in its own code: one failure there, whatever else it lost


@dataclass
class Failure:
    """One distinct failure: the promises and findings it broke, where, and every point it covers."""

    promises: tuple[str, ...]
    findings: tuple[str, ...]
    place: str  # the user's line (`scraper.py:37`) when known, else the kind of place
    points: list[Broken] = field(default_factory=list)
    line: str = ""  # `FILE:LINE` as located, when the failure is grouped by it (the first of `lines`)
    lines: tuple[str, ...] = ()  # every line it is at: more than one when they made one logical write

    @property
    def example(self) -> Broken:
        """The smallest case, the earliest among the smallest: the one whose replay line is printed."""
        return min(self.points, key=lambda b: (b.size, b.order))

    @property
    def title(self) -> str:
        """One line for a heading or a JUnit case's name: where, then what broke. The place comes first: two
        failures may break a promise in the same words at different places (a write to done.txt, one to
        records.jsonl), and the place is what tells their headings apart."""
        what = "; ".join(self.example.problems) or ", ".join(self.findings)
        if self.line:
            return f"at {self.place}: {what}"
        return f"{self.place}: {what}" if self.place else what

    def by_place(self) -> list[tuple[str, list[Broken]]]:
        """The kinds of place its points landed at (which write of a commit, which file), each with its points,
        the most first: the detail inside a failure grouped by its line."""
        places: dict[str, list[Broken]] = {}
        for b in self.points:
            places.setdefault(b.place or place_of(b.point), []).append(b)
        return sorted(places.items(), key=lambda item: (-len(item[1]), min(b.order for b in item[1])))

    def points_text(self, most: int | None = None) -> str:
        """The points it covers as ranges (`w1-w115 every 3rd`); fuzzed schedules (`r3,w9`) joined by `; `."""
        return point_ranges((b.point for b in self.points), most)

    def to_json(self) -> dict:
        example = self.example
        return {"promises": list(self.promises), "findings": list(self.findings), "place": self.place,
                "line": self.line, "lines": list(self.lines or ([self.line] if self.line else [])),
                "count": len(self.points), "points": self.points_text(),
                "by_place": [{"place": place, "count": len(points), "points": point_ranges(b.point for b in points)}
                             for place, points in self.by_place()],
                "example": example.point, "where": example.where, "problems": list(example.problems)}


def promises_of(findings: Iterable[str]) -> tuple[str, ...]:
    """The promises the finding codes broke, each once, in the codes' order."""
    named = {finding.value: finding.promise.value for finding in Finding}
    return tuple(dict.fromkeys(named.get(code, code) for code in findings))


def place_of(point: str) -> str:
    """The kind of place of a point nobody described: its kind (`w points`), or the point itself."""
    found = _NUMBERED_POINT.match(point)
    return f"{found['kind']} points" if found else point


def folded(path: str) -> str:
    """A file or page path with its numbers and ids folded (`dataset/000001.json` -> `dataset/N.json`, a request id
    `3dKP6nvOXJs3nbl` -> `N`): one file or page per record is one kind. A word with a digit in it is a name, kept
    (`crawl4ai-home/.crawl4ai`, never `N-home/.N`)."""
    return _TOKEN.sub(lambda found: "N" if _an_id(found[0]) else _NUMBER.sub("N", found[0]), path)


def _an_id(token: str) -> bool:
    """A hash or a random id: long, with digits in several places (`3f9a0c2e`); not a word like `crawl4ai`."""
    return len(token) >= 8 and sum(c.isdigit() for c in token) >= 2


def group_failures(broken: Sequence[Broken], shown: Callable[[str], str] = lambda line: line) -> list[Failure]:
    """The distinct failures among `broken`, the largest first (then the earliest): by promises, findings and
    the user's line where it is known, else by the kind of place; the lines of one logical write's pieces
    (`Broken.write`) with the same promises and findings are one failure, and a piece with no line of its own
    joins them. `shown(line)`: how a heading names a line (a shorter path)."""
    named = {finding.value: finding.promise.value for finding in Finding}
    keyed: list[tuple[tuple, Broken]] = []
    for b in broken:
        promises = tuple(dict.fromkeys(named.get(code, code) for code in b.findings))
        where = ("line", b.crash_line or b.line) if b.crash_line or b.line else ("place", b.place or place_of(b.point))
        codes = (Finding.CRASHED.value,) if b.crash_line else tuple(b.findings)  # records a crash left unstored: its
        keyed.append(((promises_of(codes) if b.crash_line else promises, codes, *where), b))  # detail, not a bug
    joined = _joined_by_writes(keyed)
    groups: dict[tuple, list[tuple[tuple, Broken]]] = {}
    for i, (key, b) in enumerate(keyed):
        at = joined.get(i, key)
        groups.setdefault(at, []).append((at if at[2] == "line" and key[2] != "line" else key, b))
    failures = []
    for root, members in groups.items():
        promises, findings, kind, where = root
        lines = tuple(sorted({key[3] for key, _ in members if key[2] == "line"}, key=_line_order))
        failure = (Failure(promises, findings, lines_place(lines, shown), line=lines[0], lines=lines) if lines
                   else Failure(promises, findings, where))
        failure.points = [b for _, b in members]
        if any(b.crash_line for b in failure.points):  # what its crashes broke besides finishing, all of it
            failure.findings = tuple(dict.fromkeys(code for b in failure.points for code in b.findings))
            failure.promises = promises_of(failure.findings)
        failures.append(failure)
    return sorted(failures, key=lambda f: (-len(f.points), min(b.order for b in f.points)))


def _joined_by_writes(keyed: list[tuple[tuple, Broken]]) -> dict[int, tuple]:
    """The key of the failure each point is in, by its index, where one logical write joins it to others: the
    lines of a write's pieces are one when their points broke the same promises with the same findings, and a
    piece with no line of its own is at them. A point no logical write joins is not in it."""
    parent: dict[tuple, tuple] = {}

    def root(key: tuple) -> tuple:
        while parent.get(key, key) != key:
            key = parent[key]
        return key

    pieces: dict[tuple, list[int]] = {}  # (promises, findings, logical write) -> its points, by index
    for i, (key, b) in enumerate(keyed):
        if b.write:
            pieces.setdefault((key[0], key[1], b.write), []).append(i)
    at: dict[int, tuple] = {}
    for indexes in pieces.values():
        located = sorted({keyed[i][0] for i in indexes if keyed[i][0][2] == "line"}, key=lambda k: _line_order(k[3]))
        if not located:
            continue  # no piece has a line: its points stay by their kind of place
        for key in located[1:]:
            if root(key) != root(located[0]):
                parent[root(key)] = root(located[0])
        at.update((i, keyed[i][0] if keyed[i][0][2] == "line" else located[0]) for i in indexes)
    return {i: root(key) for i, key in at.items()} | {i: root(key) for i, (key, _) in enumerate(keyed)
                                                      if key[2] == "line" and key in parent}


def _line_order(line: str) -> tuple[str, int]:
    path, _, number = line.rpartition(":")
    return (path, int(number)) if number.isdigit() else (line, 0)


def lines_place(lines: Sequence[str], shown: Callable[[str], str] = lambda line: line) -> str:
    """How a heading names a failure's lines: `scraper.py:33`, `scraper.py:31 and 33` (one file),
    `a.py:3 and b.py:9`."""
    files: dict[str, list[str]] = {}
    for line in lines:
        path, _, number = shown(line).rpartition(":")
        files.setdefault(path, []).append(number)
    parts = [f"{path}:{_and(numbers)}" for path, numbers in files.items()]
    return _and(parts)


def _and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def point_ranges(points: Iterable[str], most: int | None = None) -> str:
    """`w51, w52, w53, w60, r3` as `r3, w51-w53, w60`: runs of one kind's consecutive numbers joined, and a
    longer run with a stride (`w1, w4, ..., w115`) as `w1-w115 every 3rd`, the form a bug that strikes at
    one write of every product takes. `most`: at most that many parts, then how many more."""
    numbered: dict[str, list[int]] = {}
    others: list[str] = []
    for point in points:
        found = _NUMBERED_POINT.match(point)
        if found:
            numbered.setdefault(found["kind"], []).append(int(found["n"]))
        else:
            others.append(point)
    parts = [part for kind in sorted(numbered, key=lambda k: (len(k), k))
             for part in _runs(kind, sorted(set(numbered[kind])))] + others
    if most is not None and len(parts) > most:
        parts = [*parts[:most - 1], f"and {len(parts) - most + 1} more"]
    return ("; " if any("," in other for other in others) else ", ").join(parts)  # `r3,w9`: a whole schedule


STRIDE_RUN = 4  # members a run with a stride needs to be shown as one: with three, the list is as short


def _runs(kind: str, numbers: list[int]) -> list[str]:
    """The sorted `numbers` as runs, greedily from the smallest: `w3-w5`, `w1-w115 every 3rd`, or `w9`."""
    parts, i = [], 0
    while i < len(numbers):
        j = i
        step = numbers[i + 1] - numbers[i] if i + 1 < len(numbers) else 0
        while j + 1 < len(numbers) and numbers[j + 1] - numbers[j] == step:
            j += 1
        if step == 1 and j > i:
            parts.append(f"{kind}{numbers[i]}-{kind}{numbers[j]}")
        elif step > 1 and j - i + 1 >= STRIDE_RUN:
            parts.append(f"{kind}{numbers[i]}-{kind}{numbers[j]} every {nth(step)}")
        else:
            parts.append(f"{kind}{numbers[i]}")
            j = i
        i = j + 1
    return parts


def header(points: int, broken: int, failures: int) -> str:
    """The line every report opens with."""
    return (f"{points} crash point{'s' if points != 1 else ''}, {broken} broken,"
            f" {failures} distinct failure{'s' if failures != 1 else ''}")


def request_before(history: History, kill_t: float, start: int = 0) -> tuple[int, str] | None:
    """The number (1-based, counting the start's own) and path of the start's last request before `kill_t`."""
    made = [e for e in history.of_type("request") if e.get("start", 0) == start and e["t"] <= kill_t]
    return (len(made), made[-1]["path"]) if made else None


def request_words(history: History, kill: dict | None = None) -> str:
    """"after request 9 (/product/4)" for `kill` (a kill or power cut; the run's first by default), or "before
    its first request"."""
    kill = kill or history.first("kill") or history.first("power_lost")
    if kill is None:
        return ""
    last = request_before(history, kill["t"], kill.get("start", 0))
    return f"after request {last[0]} ({last[1]})" if last else "before its first request"


def nth(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def timeline_events(history: History) -> dict:
    """What a triage page draws of one run, on one time axis: starts, requests, records stored (a design's own
    write time), kills, pauses and power cuts, and the run's end. Plain lists, small enough to keep in JSON."""
    events: list[list] = []
    for e in history.of_type("process_started"):
        events.append([round(e["t"], 4), "start", f"start {e['start'] + 1}"])
    for e in history.of_type("request"):
        events.append([round(e["t"], 4), "request", f"{e['path']} ({e.get('status', '')})"])
    for e in history.of_type("store_record"):
        if e.get("stamped"):
            events.append([round(e["t"], 4), "write", f"record {e['key']} stored"])
    for e in history.of_type("kill"):
        events.append([round(e["t"], 4), "kill", f"{e.get('signal', 'SIGKILL')} at {e.get('point', '')}"])
    for e in history.of_type("power_lost"):
        events.append([round(e["t"], 4), "power", f"power cut at {e.get('point', '')}: {e.get('files', 0)} files,"
                                                  f" {e.get('bytes', 0)} bytes lost"])
    for kind in ("paused", "resumed", "crash", "time_limit"):
        for e in history.of_type(kind):
            events.append([round(e["t"], 4), kind, kind.replace("_", " ")])
    finished = history.first("run_finished")
    end = finished["t"] if finished else max((e[0] for e in events), default=0.0)
    return {"end": round(end, 4), "events": sorted(events, key=lambda e: e[0]), "crash_line": crash_line(history)}


def crash_line(history: History) -> str:
    """`FILE:LINE` where the run's crashed start failed in its own program (the `crash` event's `line`: the frame
    nearest the failing call, check/crash_frames.py), "" when no start crashed or none printed a traceback. A
    crashed point's failure is at this line, not at the write its kill landed before: the kill tore a file, the
    crash is where the program could not read it, and every kill that tears it the same way is the same bug."""
    crash = history.first("crash")
    return crash.get("line", "") if crash else ""


def failure_line(timeline: dict) -> str:
    """Where a broken point's crash failed, from the `timeline_events` the outputs keep of it; "" without one."""
    return timeline.get("crash_line", "") if isinstance(timeline, dict) else ""


def triage_of(verdict, history: History) -> dict:
    """What the outputs keep of a broken run (a check.verdict.RunVerdict): its finding codes, its lost, not
    stored (a crawl that did not finish), duplicated, unexpected and unreadable keys (a torn row, named by its
    file or line and, where its text still says, its key), and its `timeline_events`."""
    keys = {kind: verdict.categories.get(kind, {}).get("examples", [])
            for kind in ("lost", "not_stored_unfinished", "duplicated", "unexpected", "unreadable")}
    return {"findings": [code for code in verdict.findings if code != Finding.NO_KILL_LANDED.value], "keys": keys,
            "timeline": timeline_events(history)}
