"""Kill schedules: what ends each start, and the seeded timed, request and redeploy schedules.

A schedule is a list of kill points, one per start; the start after the last point runs to the end.
The kinds of point live in harness/faults/points/, one module each (timed `t0.42[@K]`, after the
first request `f0.4[:8]`, request `r5`
and `r5+`, line `l:scrapers/idempotent.py:complete+3:2`, redeploy `d0.3:0.05[@K]`, server restart
`s0.5`, pause `p0.4:3[@K]`); this module holds the schedule: its parsing, its validation against the designs,
and its seeded kinds. A timed point's, a redeploy's or a pause's delay counts from the previous point's kill
(or resume). A pause ends no start: the start it stopped goes on, and the next point is that start's.
Points are written joined by commas, `r5,l:scrapers/idempotent.py:complete+8:2,t0.3`, which is also
what `killtest run --schedule` takes, so any schedule can be replayed from one command.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import DesignLike, KillPoint, parse_point
from killtest.harness.faults.points.first_request import AfterFirstRequest
from killtest.harness.faults.points.redeploy import Redeploy
from killtest.harness.faults.points.request import AtRequest
from killtest.harness.faults.points.timed import AfterDelay
from killtest.harness.published import KILL_DELAY_S, KILLS_PER_RUN


@dataclass(frozen=True)
class KillSchedule:
    """`points[i]` ends start i; the start after the last runs to the end."""

    seed: int | None
    points: tuple[KillPoint, ...]

    @property
    def kills(self) -> int:
        return len(self.points)

    @property
    def spec(self) -> str:
        return ",".join(p.spec for p in self.points)


def timed_schedule(seed: int, kills: int = KILLS_PER_RUN, low_s: float = KILL_DELAY_S[0],
                   high_s: float = KILL_DELAY_S[1], first_request_wait_s: float | None = None,
                   spread: bool = False) -> KillSchedule:
    """`kills` delays drawn uniformly from [low_s, high_s]; the same seed always gives the same schedule.

    The delays count from each start's spawn (`t` points), or, given `first_request_wait_s`, from its first
    request, waited for that long (`f` points: a measured user's design, harness/running/pace.py); the same
    seed draws the same delays either way.

    With `spread` the delays are spread over the whole of [low_s, high_s] instead (a measured crawl's work): the
    range cut into `kills` slices of equal ratio (log-scaled: as many kills under a second as past it, for a crawl
    whose first store write may come at 0.1 s or at 5 s), one delay drawn in each slice, the slices' order
    shuffled. A uniform draw over a short window kills every start in one crash state (a framework flushing its
    items once a second, killed 0.2-1 s in, never stored a record in 100 kills); spread, a run reaches starts early
    in their work and late, before their first store write and well after it."""
    if kills < 0:
        raise KilltestError(f"the number of kills must be zero or more, not {kills}")
    if not 0 < low_s <= high_s:
        raise KilltestError(f"kill delays need 0 < low <= high, not {low_s}..{high_s}")
    if spread:  # its own seed string: a seed's uniform schedule stays what it was
        rng = random.Random(f"killtest-spread-schedule:{seed}")
        ratio = math.log(high_s / low_s)
        delays = [round(low_s * math.exp(ratio * (i + rng.random()) / kills), 4) for i in range(kills)]
        rng.shuffle(delays)
        # The first slice's kill first: a run's first start crawls it all, so that kill always lands, and a run
        # is never left proving nothing because its first kill came later than a faster crawl lasted (a CI user
        # project's run drew 4.7 s first of 0.2-6.1 s and its crawl was done in 3.6).
        delays.insert(0, delays.pop(delays.index(min(delays))))
    else:
        rng = random.Random(f"killtest-schedule:{seed}")
        delays = [round(rng.uniform(low_s, high_s), 4) for _ in range(kills)]
    if first_request_wait_s is not None:
        return KillSchedule(seed=seed, points=tuple(AfterFirstRequest(d, first_request_wait_s) for d in delays))
    return KillSchedule(seed=seed, points=tuple(AfterDelay(d) for d in delays))


def request_schedule(seed: int, kills: int, low: int, high: int) -> KillSchedule:
    """`kills` SIGKILLs, each at a start's N-th request with N drawn uniformly from [low, high].

    The same point in every design's work whatever its start-up cost: a framework that takes 0.9 s
    to import is killed mid-crawl too, not before its first request as a 0.2-1.0 s delay would.
    """
    if not 1 <= low <= high:
        raise KilltestError(f"kill requests need 1 <= low <= high, not {low}..{high}")
    rng = random.Random(f"killtest-request-schedule:{seed}")
    return KillSchedule(seed=seed, points=tuple(AtRequest(rng.randint(low, high)) for _ in range(kills)))


def redeploy_schedule(seed: int, kills: int, low_s: float, high_s: float, grace_s: float) -> KillSchedule:
    """`kills` redeploys (SIGTERM, then SIGKILL after `grace_s`) at delays drawn from [low_s, high_s]."""
    if not 0 < low_s <= high_s or grace_s < 0:
        raise KilltestError(f"redeploys need 0 < low <= high and a grace of zero or more, not {low_s}..{high_s},"
                            f" {grace_s}")
    rng = random.Random(f"killtest-redeploy-schedule:{seed}")
    return KillSchedule(seed=seed, points=tuple(Redeploy(round(rng.uniform(low_s, high_s), 4), grace_s)
                                                for _ in range(kills)))


def run_seeds(base_seed: int, runs: int) -> list[int]:
    """Run r of a campaign uses seed base_seed + r - 1, so any one run replays alone with --runs 1 --seed."""
    return [base_seed + r for r in range(runs)]


def parse_schedule(text: str, design: DesignLike | None = None) -> KillSchedule:
    """A schedule from its comma-joined spec; an empty spec is no kill at all."""
    return KillSchedule(seed=None, points=tuple(parse_point(p, design) for p in text.split(",") if p.strip()))


def validate_schedule(schedule: KillSchedule, designs: Sequence[DesignLike], workers: int = 1) -> None:
    """A one-line KilltestError for the first point that cannot apply to every design with `workers` workers."""
    for point in schedule.points:
        point.validate(designs, workers)
    problem = order_problem(schedule.points)
    if problem is not None:
        raise KilltestError(problem)


def order_problem(points: Sequence[KillPoint]) -> str | None:
    """Why the points cannot run in this order, in one line: a point carried out by how its start is
    spawned (a line, a store write, r5+) after one that leaves the start running would never fire."""
    for before, point in zip(points, points[1:]):
        if point.needs_own_start and not before.starts_over:
            return (f"kill point {point.spec} needs a start of its own (it is set up when the start is spawned),"
                    f" but {before.spec} before it leaves the start running; put {point.spec} first, or after a"
                    " point that ends the whole start")
    return None
