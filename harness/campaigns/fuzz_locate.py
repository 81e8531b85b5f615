"""The program's own line of each kill a fuzzed schedule landed at a store write, so that fuzz, like explore, gives
one failure per bug at the user's line (report/triage.trial_failures groups by it).

A trial whose schedule holds a point run under the write gate (a `w45`, an aimed `r5+`, their power-cut twins: the
points carrying an injection plan) has each held write's stack read before its kill, in the trial's own run
(campaigns/locate.stack_reads: the gate appends one dump a kill, in the kills' order, so the k-th dump is the k-th
gated point that landed). Nothing is run again: a read costs what py-spy takes to read a stack, and only a run with a
gated point pays it. Where the dumps and the landed gated kills differ in number, none is given a line.

A trial's line (`trial_line`) is the one line every kill it landed was at (a located store write's, a line point's);
a trial with a kill at no known line (a request, a timed kill), or at two lines, keeps none and is grouped by its
kinds of place. Its logical write (check/distinct.py: the pieces of one buffered stream's write) is named only for a
trial whose one kill landed at a store write, with its catalog and the points before: `w11-w12` means another write
on another catalog or after other kills.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from killtest.harness.campaigns.locate import Located, stack_reads, why_not
from killtest.harness.campaigns.point_words import logical_write, schedule_words
from killtest.harness.design.model import Design
from killtest.harness.faults.points import KillPoint
from killtest.harness.faults.points.line import AtLine, shown_path
from killtest.harness.history import History

Reader = Callable[[], tuple[list[Located | None], float]]


def gated(point: KillPoint) -> bool:
    """Whether the point's start runs under the write gate, which can read its held write's stack."""
    return getattr(point, "plan", None) is not None


@contextlib.contextmanager
def trial_reading(design: Design, points: Sequence[KillPoint]) -> Iterator[Reader | None]:
    """Around a trial's run: the stacks of its gated kills read (None when no point is gated, or the design's writes
    cannot be located: campaigns/locate.why_not)."""
    if why_not(design) is not None or not any(gated(point) for point in points):
        yield None
        return
    with stack_reads(design) as read:
        yield read


def landed_kills(history: History) -> list[str]:
    """The points that ended a start, in order, each once a start (a power cut is told as a kill too)."""
    seen: dict[tuple[Any, Any], str] = {}
    for event in history.events:
        if event["type"] in ("kill", "power_lost") and event.get("point"):
            seen.setdefault((event.get("start"), event.get("point")), event["point"])
    return list(seen.values())


def kill_locations(points: Sequence[KillPoint], history: History, found: list[Located | None]) -> dict[str, Located]:
    """Each landed gated point's location, by its spec; {} when the dumps and the gated kills differ in number."""
    specs = {point.spec for point in points if gated(point)}
    kills = [spec for spec in landed_kills(history) if spec in specs]
    if len(kills) != len(found):
        return {}
    return {spec: where for spec, where in zip(kills, found) if where is not None}


def trial_line(points: Sequence[KillPoint], history: History, located: dict[str, Located]) -> str:
    """The one `FILE:LINE` every kill the trial landed was at (named as a line point names its file); "" else."""
    by_spec = {point.spec: point for point in points}
    lines = set()
    for spec in landed_kills(history):
        point = by_spec.get(spec)
        if isinstance(point, AtLine):
            lines.add(f"{point.path}:{point.line}")
        elif spec in located and located[spec].line:
            path, _, number = located[spec].line.rpartition(":")
            lines.add(f"{shown_path(path)}:{number}")
        else:
            return ""  # a kill at no known line: the trial is not at one
    return lines.pop() if len(lines) == 1 else ""


def trial_write(points: Sequence[KillPoint], history: History, recording_before: Callable[[str], Any],
                catalog: str) -> str:
    """The logical write the trial's one kill landed inside, named with its catalog and the points before it
    (`2x3 after r3: w11-w12`); "" when more than one kill landed, or it was no piece of a logical write."""
    kills = landed_kills(history)
    if len(kills) != 1:
        return ""
    at = next((i for i, point in enumerate(points) if point.spec == kills[0]), None)
    if at is None:
        return ""
    before = ",".join(point.spec for point in points[:at])
    write = logical_write(points[at], recording_before(before))
    return f"{catalog} after {before or 'nothing'}: {write}" if write else ""


def trial_words(points: Sequence[KillPoint], history: History, cache: dict, design: str, catalog: str,
                found: list[Located | None]) -> dict[str, str]:
    """What a failing trial keeps of where it broke: its points' words (point_words.schedule_words, each located
    store-write kill's place in the program after it), its `line` and its logical `write`, when it has them."""
    located = kill_locations(points, history, found)
    words = schedule_words(points, history, cache, design, {spec: where.words for spec, where in located.items()})
    line = trial_line(points, history, located)
    write = trial_write(points, history, lambda before: cache.get((design, before)), catalog)
    return {**words, **({"line": line} if line else {}), **({"write": write} if write else {})}
