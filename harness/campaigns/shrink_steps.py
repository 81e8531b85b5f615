"""The steps a fuzz failure shrinks by (harness/campaigns/fuzzing.py's `shrink`): each case one step smaller.

Drop a point, lower a numbered point, or run on a smaller catalog (never on a recorded site, whose catalog is
the recording). A smaller catalog is tried first with the points numbered as they were: a crawl starts the same
way on any catalog, so the n-th request or write of an early failure is often the same one there.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from killtest.harness.campaigns.fuzzing import Case


def smaller(case: Case) -> Iterator[Case]:
    """Cases one step smaller than `case`: fewer points, lower numbers, a smaller catalog (never on a
    recorded site: its catalog is the recording)."""
    points = case.schedule.split(",")
    for i in range(len(points)):
        if len(points) > 1:
            yield dataclasses.replace(case, schedule=",".join(points[:i] + points[i + 1:]))
    for i, point in enumerate(points):
        for lower in _lower(point):
            yield dataclasses.replace(case, schedule=",".join(points[:i] + [lower] + points[i + 1:]))
    for smaller in ((case.pages, case.per_page - 1), (case.pages - 1, case.per_page)):
        if not case.recorded and min(smaller) >= 1:
            yield from _scaled(case, *smaller)


def _scaled(case: Case, pages: int, per_page: int) -> Iterator[Case]:
    """The case on a smaller catalog: first with its points as they were (a zoo design's lost record sat at
    w68-72 on every catalog from 1x1 to 3x1, and the proportional tries below all missed it), then its numbered
    points moved in proportion (the crawl is shorter), and a few writes either side: the same place in the crawl,
    near enough."""
    if any(_numbered(p) for p in case.schedule.split(",")):
        yield dataclasses.replace(case, pages=pages, per_page=per_page)
    ratio = (pages + pages * per_page) / (case.pages + case.pages * case.per_page)  # the crawl's requests
    for nudge in (0, -1, 1, -2, 2, -3, 3, -5, 5, -8, 8):
        points = [_renumbered(point, ratio, nudge) for point in case.schedule.split(",")]
        if all(points):
            yield dataclasses.replace(case, pages=pages, per_page=per_page, schedule=",".join(p for p in points if p))
        if not any(_numbered(p) for p in case.schedule.split(",")):
            return  # nothing numbered to nudge


def _numbered(point: str) -> tuple[str, int, str] | None:
    """`xw45` -> (xw, 45, ""), `aw45` -> (aw, 45, ""), `r5+` -> (r, 5, +); None for a line, a timed point, a server's
    `w3:c2`."""
    match = re.fullmatch(r"(x?r|x?a?w)(\d+)(\+?)", point)
    return (match[1], int(match[2]), match[3]) if match else None


def _renumbered(point: str, ratio: float, nudge: int) -> str | None:
    if (numbered := _numbered(point)) is None:
        return point
    kind, number, suffix = numbered
    number = round(number * ratio) + (nudge if kind.endswith("w") else 0)
    return f"{kind}{number}{suffix}" if number >= 1 else None


def _lower(point: str) -> list[str]:
    """`w45` -> w22, w44; `r5+` -> r2+, r4+; `xw45` -> xw22, xw44: the same kind, a smaller number."""
    if (numbered := _numbered(point)) is None:
        return []
    kind, number, suffix = numbered
    return [f"{kind}{n}{suffix}" for n in sorted({number // 2, number - 1}) if 0 < n < number]
