"""`t0.42[@K]`: SIGKILL 0.42 s after the start was spawned (the article's kind; sampled, not exact).

With `@K` it hits worker K alone (of `--workers N`): the others go on, and worker K is started again
at once, as a platform restarts one pod.
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


@register
@dataclass(frozen=True)
class AfterDelay(PointKind):
    delay_s: float
    worker: int | None = None  # 1-based: kill this worker alone; None: every worker of the start

    PREFIX = "t"
    FORM = "t<seconds>"
    EXAMPLES = ("t0.4",)
    ORDER = 10
    TAKES_WORKER = True

    @classmethod
    def parse(cls, text: str, design: DesignLike | None = None) -> AfterDelay:
        body, worker = split_worker(text)
        return cls(positive_seconds(body[len(cls.PREFIX):]), worker)

    @property
    def spec(self) -> str:
        return f"t{self.delay_s:g}{at_worker(self.worker)}"

    @property
    def wait_s(self) -> float:
        return self.delay_s

    def fire(self, target: Target) -> Fired:
        if self.worker is not None:
            returncode, pid = target.restart_worker(self.worker, None)
            return Fired("SIGKILL", returncode, start_over=False, fields={"worker": self.worker}, restarted_pid=pid)
        return Fired("SIGKILL", target.kill())


def at_worker(worker: int | None) -> str:
    return "" if worker is None else f"@{worker}"
