"""Kill schedules: what ends each start with SIGKILL, and the seeded timed schedules of the article.

A schedule is a list of kill points, one per start; the start after the last point runs to the end.
A point is one of:
- `t0.42`: 0.42 s after the start was spawned (the article's kind; sampled, not exact);
- `r5`: when the site receives the start's 5th request, before it answers (exact);
- `r5+`: as soon as the site has written its answer to the 5th request. Not exact: the scraper
  races the signal and has sometimes stored the page already (seen here with a pre-forked start).
  The site cannot see inside the scraper; for an exact point after the answer, use a line;
- `s0.5`: 0.5 s after the start, the store's own server (PostgreSQL or Redis, the harness's private
  one) is SIGKILLed and started again on the same data, and the start's workers are killed with it;
- `l:scrapers/idempotent.py:117:2`: at the 2nd execution of line 117 of that file, inside the
  scraper's own process, by a tracer the harness starts there (exact; Python designs only).
A timed point or a redeploy may end with `@K` to hit worker K alone (of `--workers N`): the others go
on, and worker K is started again at once, as a platform restarts one pod. `d0.3:0.05@1,d0.2:0.05@2`
is a rolling redeploy of two workers. Its delay counts from the previous point's kill.
Points are written joined by commas, `r5,l:scrapers/idempotent.py:117:2,t0.3`, which is also what
`killtest run --schedule` takes, so any schedule can be replayed from one command.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Union

from harness.errors import KilltestError
from harness.published import KILL_DELAY_S, KILLS_PER_RUN


@dataclass(frozen=True)
class AfterDelay:
    delay_s: float
    worker: int | None = None  # 1-based: kill this worker alone; None: every worker of the start

    @property
    def spec(self) -> str:
        return f"t{self.delay_s:g}{_at(self.worker)}"


@dataclass(frozen=True)
class AtRequest:
    index: int  # 1-based, counting the start's own requests
    after_response: bool = False  # False: before the site answers; True: once the answer is written

    @property
    def spec(self) -> str:
        return f"r{self.index}{'+' if self.after_response else ''}"


@dataclass(frozen=True)
class AtLine:
    path: str  # relative to the project root
    line: int
    hit: int = 1  # 1-based execution count of that line in the start

    @property
    def spec(self) -> str:
        return f"l:{self.path}:{self.line}:{self.hit}"


@dataclass(frozen=True)
class Redeploy:
    delay_s: float
    grace_s: float  # from SIGTERM to SIGKILL
    worker: int | None = None  # 1-based: redeploy this worker alone; None: every worker of the start

    @property
    def spec(self) -> str:
        return f"d{self.delay_s:g}:{self.grace_s:g}{_at(self.worker)}"


@dataclass(frozen=True)
class ServerRestart:
    delay_s: float
    worker = None  # it hits the whole start

    @property
    def spec(self) -> str:
        return f"s{self.delay_s:g}"


def _at(worker: int | None) -> str:
    return "" if worker is None else f"@{worker}"


KillPoint = Union[AfterDelay, AtRequest, AtLine, Redeploy, ServerRestart]


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


def timed_schedule(seed: int, kills: int = KILLS_PER_RUN,
                   low_s: float = KILL_DELAY_S[0], high_s: float = KILL_DELAY_S[1]) -> KillSchedule:
    """`kills` delays drawn uniformly from [low_s, high_s]; the same seed always gives the same schedule."""
    if kills < 0:
        raise KilltestError(f"the number of kills must be zero or more, not {kills}")
    if not 0 < low_s <= high_s:
        raise KilltestError(f"kill delays need 0 < low <= high, not {low_s}..{high_s}")
    rng = random.Random(f"killtest-schedule:{seed}")
    return KillSchedule(seed=seed, points=tuple(AfterDelay(round(rng.uniform(low_s, high_s), 4))
                                                for _ in range(kills)))


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


def parse_point(text: str) -> KillPoint:
    text = text.strip()
    try:
        body, _, worker_text = text.partition("@")
        worker = int(worker_text) if worker_text else None
        if worker is not None and (worker < 1 or not body.startswith(("t", "d"))):
            raise ValueError("only timed kills and redeploys hit one worker, counted from 1")
        if body.startswith("t"):
            point = AfterDelay(float(body[1:]), worker)
            if point.delay_s > 0:
                return point
        elif text.startswith("r"):
            after = text.endswith("+")
            point = AtRequest(int(text[1:-1] if after else text[1:]), after_response=after)
            if point.index >= 1:
                return point
        elif body.startswith("s"):
            point = ServerRestart(float(body[1:]))
            if point.delay_s > 0:
                return point
        elif body.startswith("d"):
            delay, grace = body[1:].split(":")
            point = Redeploy(float(delay), float(grace), worker)
            if point.delay_s > 0 and point.grace_s >= 0:
                return point
        elif text.startswith("l:"):
            path, line, hit = text[2:].rsplit(":", 2)
            point = AtLine(path, int(line), int(hit))
            if path and point.line >= 1 and point.hit >= 1:
                return point
    except ValueError:
        pass
    raise KilltestError(f"bad kill point {text!r}: write t<seconds>, r<request number>[+], d<seconds>:<grace>,"
                        " s<seconds> or l:<file>:<line>:<hit>, for example t0.4, r5, r5+, d0.5:0.1, s0.5 or"
                        " l:scrapers/idempotent.py:117:1; t and d points may end with @<worker>")


def parse_schedule(text: str) -> KillSchedule:
    """A schedule from its comma-joined spec; an empty spec is no kill at all."""
    return KillSchedule(seed=None, points=tuple(parse_point(p) for p in text.split(",") if p.strip()))


def run_seeds(base_seed: int, runs: int) -> list[int]:
    """Run r of a campaign uses seed base_seed + r - 1, so any one run replays alone with --runs 1 --seed."""
    return [base_seed + r for r in range(runs)]
