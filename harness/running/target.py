"""What a firing kill point can reach in a run: the running start, its workers, the store's server.

The runner (killtest.harness.running.runner) hands a `StartTarget` to `point.fire`; it implements the
`Target` protocol of killtest.harness.faults.points. A pause (killtest.harness.faults.points.pause) is the
one action that is not a kill: it writes `paused` when it sends SIGSTOP and `resumed` when it sends
SIGCONT, and the start goes on.
"""

from __future__ import annotations

import os
import signal
import time
from typing import TYPE_CHECKING

from killtest.harness.running.processes import Start

if TYPE_CHECKING:
    from killtest.harness.running.runner import _Run


class StartTarget:
    """The running start of `run`, in crawl `crawl`, as a point may act on it."""

    def __init__(self, run: _Run, crawl: int, point: str = "") -> None:
        self.run, self.crawl, self.point = run, crawl, point
        assert run.current is not None
        self.start: Start = run.current

    def kill(self) -> int:
        return self.start.kill()

    def redeploy(self, grace_s: float) -> int:
        return self.start.redeploy(grace_s)

    def restart_worker(self, worker: int, grace_s: float | None) -> tuple[int, int]:
        return self.start.restart_worker(worker, grace_s, self.run.design, self.run.launch_for(self.crawl),
                                         self.run.launcher)

    def restart_store(self) -> float:
        assert self.run.restart_store is not None  # checked by the point before the run began
        return self.run.restart_store()

    def pause(self, worker: int | None, seconds: float) -> float:
        """SIGSTOP the workers' process groups, sleep (never past the run's time limit), SIGCONT them.

        The runner's thread waits out the pause: the other workers go on meanwhile, and the next point's
        delay counts from the resume. Whatever interrupts the sleep, the groups are continued (a stopped
        group would still die of the SIGKILL that ends the run, but a resumed one dies the same way).
        """
        history, began = self.run.history, self.run.began
        groups = self.start.pids if worker is None else [self.start.pids[worker - 1]]
        stopped = [group for group in groups if _signal_group(group, signal.SIGSTOP)]
        paused_at = time.monotonic()
        history.add("paused", paused_at - began, start=self.start.index, worker=worker, pids=stopped,
                    seconds=seconds, point=self.point)
        try:
            time.sleep(max(0.0, min(seconds, self.run.deadline - paused_at)))
        finally:
            for group in stopped:
                _signal_group(group, signal.SIGCONT)
            resumed_at = time.monotonic()
            history.add("resumed", resumed_at - began, start=self.start.index, worker=worker, pids=stopped,
                        seconds=round(resumed_at - paused_at, 4), point=self.point)
        return resumed_at - paused_at


def _signal_group(group: int, signum: int) -> bool:
    """Send `signum` to process group `group`; False when the group is gone (that worker had finished)."""
    try:
        os.killpg(group, signum)
        return True
    except ProcessLookupError:
        return False
