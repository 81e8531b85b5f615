"""`d0.3:0.05[@K]`: a redeploy 0.3 s after the start: SIGTERM, then SIGKILL when the 0.05 s grace ends.

With `@K` it redeploys worker K alone; `d0.3:0.05@1,d0.2:0.05@2` is a rolling redeploy of two
workers, each delay counted from the previous point.
"""

from __future__ import annotations

from dataclasses import dataclass

from killtest.harness.faults.points import (
    DesignLike,
    Fired,
    PointKind,
    Target,
    positive_seconds,
    register,
    split_worker,
)
from killtest.harness.faults.points.timed import at_worker


@register
@dataclass(frozen=True)
class Redeploy(PointKind):
    delay_s: float
    grace_s: float  # from SIGTERM to SIGKILL
    worker: int | None = None  # 1-based: redeploy this worker alone; None: every worker of the start

    PREFIX = "d"
    FORM = "d<seconds>:<grace>"
    EXAMPLES = ("d0.5:0.1",)
    ORDER = 30
    TAKES_WORKER = True

    @classmethod
    def parse(cls, text: str, design: DesignLike | None = None) -> Redeploy:
        body, worker = split_worker(text)
        delay, grace = body[len(cls.PREFIX):].split(":")
        grace_s = float(grace)
        if not grace_s >= 0:
            raise ValueError(text)
        return cls(positive_seconds(delay), grace_s, worker)

    @property
    def spec(self) -> str:
        return f"d{self.delay_s:g}:{self.grace_s:g}{at_worker(self.worker)}"

    @property
    def wait_s(self) -> float:
        return self.delay_s

    def fire(self, target: Target) -> Fired:
        if self.worker is not None:
            returncode, pid = target.restart_worker(self.worker, self.grace_s)
            return Fired("SIGTERM", returncode, start_over=False, fields={"worker": self.worker}, restarted_pid=pid)
        return Fired("SIGTERM", target.redeploy(self.grace_s))
