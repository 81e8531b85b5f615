"""Kill schedules: when, after each start, the scraper's process group gets SIGKILL."""

from __future__ import annotations

import random
from dataclasses import dataclass

from harness.errors import KilltestError
from harness.published import KILL_DELAY_S, KILLS_PER_RUN


@dataclass(frozen=True)
class KillSchedule:
    """`delays_s[i]` is how long start i runs before it is killed; the start after the last runs to the end."""

    seed: int
    delays_s: tuple[float, ...]

    @property
    def kills(self) -> int:
        return len(self.delays_s)

    def to_json(self) -> dict:
        return {"seed": self.seed, "delays_s": list(self.delays_s)}


def timed_schedule(seed: int, kills: int = KILLS_PER_RUN,
                   low_s: float = KILL_DELAY_S[0], high_s: float = KILL_DELAY_S[1]) -> KillSchedule:
    """`kills` delays drawn uniformly from [low_s, high_s]; the same seed always gives the same schedule."""
    if kills < 0:
        raise KilltestError(f"the number of kills must be zero or more, not {kills}")
    if not 0 < low_s <= high_s:
        raise KilltestError(f"kill delays need 0 < low <= high, not {low_s}..{high_s}")
    rng = random.Random(f"killtest-schedule:{seed}")
    return KillSchedule(seed=seed, delays_s=tuple(round(rng.uniform(low_s, high_s), 4) for _ in range(kills)))


def run_seeds(base_seed: int, runs: int) -> list[int]:
    """Run r of a campaign uses seed base_seed + r - 1, so any one run replays alone with --runs 1 --seed."""
    return [base_seed + r for r in range(runs)]
