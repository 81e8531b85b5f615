"""An after-point and the next write's before-point that reach one crash state are one failure, not two.

`aw5` kills once store write 5 is done, before the start's next durable step (faults/points/after_store_write.py);
for a design that keeps all its state in its store (no server declared besides it), that next step is store
write 6 (a file store's next write-type call, a server store's next counted statement), so `aw5` leaves the
store as `w6` does: only what the program did in between without writing
(a request) differs. When both broke the same promises with the same findings they are one failure: the after
point takes the before-point's line (where the program was located to write next) or its kind of place, and
is not located itself (`located_by_its_neighbour`), which keeps the locator's runs for other kinds. With a
declared server (a queue in Redis) a command may lie between the two writes: then the after-point is a crash
state of its own, located and grouped as any point. Plain data: PointOutcomes in, their `line` and `place` set.
"""

from __future__ import annotations

import re
from typing import Any

from killtest.harness.faults.points.after_store_write import AfterStoreWrite

_PLAIN_AFTER = re.compile(r"aw(\d+)")  # a store write by its place: its neighbour is the next place


def states_meet(design: Any) -> bool:
    """Whether every durable step of the design is a write to its store: no server declared besides it."""
    return not getattr(design, "servers", ())


def located_by_its_neighbour(point: Any, design: Any) -> bool:
    """An after-point whose failure takes its neighbour's line (`join_twin_states`): not located on its own."""
    return (isinstance(point, AfterStoreWrite) and _PLAIN_AFTER.fullmatch(point.spec) is not None
            and states_meet(design))


def join_twin_states(outcomes: list, design: Any) -> None:
    """Each broken `aw<n>` whose `w<n+1>` broke with the same findings takes that point's line and place."""
    if not states_meet(design):
        return
    by_point = {outcome.point: outcome for outcome in outcomes}
    for outcome in outcomes:
        plain = _PLAIN_AFTER.fullmatch(outcome.point)
        neighbour = by_point.get(f"w{int(plain[1]) + 1}") if plain else None
        if outcome.valid or neighbour is None or neighbour.valid or neighbour.findings != outcome.findings:
            continue
        if neighbour.line or not outcome.line:  # never a line of its own traded for none
            outcome.line, outcome.place = neighbour.line, neighbour.place
