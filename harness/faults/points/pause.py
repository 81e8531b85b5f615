"""`p0.4:3[@K]`: 0.4 s after the start, SIGSTOP it (or worker K alone) for 3 s, then SIGCONT: a pause, not a kill.

Jepsen's `hammer-time`: a GC pause, a stalled event loop or a frozen VM, made with signals on the
workers' process groups. The start goes on afterwards (like a worker restarted alone, the runner does
not start it over), so a pause longer than the lease lets another worker claim the page the paused one
holds; when it wakes up, an unfenced commit lands anyway: a zombie write
(killtest.harness.check.zombies). The runner writes `paused` and `resumed`, not `kill`.
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
class Pause(PointKind):
    delay_s: float  # from the start (or the previous point), like a timed point's
    pause_s: float  # from SIGSTOP to SIGCONT
    worker: int | None = None  # 1-based: pause this worker alone; None: every worker of the start

    PREFIX = "p"
    FORM = "p<seconds>:<paused seconds>"
    EXAMPLES = ("p0.4:3",)
    ORDER = 35
    TAKES_WORKER = True

    @classmethod
    def parse(cls, text: str, design: DesignLike | None = None) -> Pause:
        body, worker = split_worker(text)
        delay, paused = body[len(cls.PREFIX):].split(":")
        return cls(positive_seconds(delay), positive_seconds(paused), worker)

    @property
    def spec(self) -> str:
        return f"p{self.delay_s:g}:{self.pause_s:g}{at_worker(self.worker)}"

    @property
    def wait_s(self) -> float:
        return self.delay_s

    @property
    def starts_over(self) -> bool:
        return False  # the start goes on after SIGCONT

    def fire(self, target: Target) -> Fired:
        target.pause(self.worker, self.pause_s)  # it records `paused` and `resumed`
        return Fired("SIGSTOP", 0, start_over=False, killed=False)
