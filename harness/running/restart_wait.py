"""The supervisor's wait between a kill and the next start (--restart-delay): how long, and waiting it out.

killtest used to start the next start at once. A real supervisor does not: systemd sleeps RestartSec=, Kubernetes
backs off from 10 s to 300 s, a redeploy takes minutes, and a crawler may wait out on restart what its dead start
held (feapder's REQUEST_LOST_TIMEOUT, a lock's timeout). The runner asks a `RestartWait` before each start: it
waits only after a start was killed whole (not after a pause, nor after a worker killed alone and started again at
once, nor before the first start, nor after a start that ended by itself), and writes `restart_delayed`.

Nothing runs while it waits, so no no-progress watch does (running/start_watch.py watches a start, and there is
none); the wait does not count against the time limit: the runner moves its deadline on by the time waited.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from killtest.harness import defaults
from killtest.harness.history import History
from killtest.harness.option_kinds import RestartDelay

SAY_EVERY_S = 5.0  # a long wait says how long it has left, so a person watching sees the run is alive


def backoff_restart(delay: RestartDelay, restart: int, ran_s: float) -> int:
    """The number of the next restart in `delay`'s back-off, after a start that ran `ran_s` before its kill and
    was itself restart number `restart` (0: the first start): Kubernetes resets the back-off after a container
    ran RESTART_BACKOFF_RESET_S, so a start that ran that long makes the next restart the first again."""
    return 1 if ran_s >= defaults.RESTART_BACKOFF_RESET_S else restart + 1


@dataclass
class RestartWait:
    """The restart delay of one run: whether the next start waits, and which restart of the back-off it is."""

    delay: RestartDelay
    restart: int = 0  # the back-off's number of the restart to come (1, 2, ...); 0 before any kill
    after_kill: bool = False  # the last start was killed whole: the next one waits

    def killed(self, ran_s: float) -> None:
        """A start that ran `ran_s` was killed whole: the next start comes after the delay."""
        self.restart = backoff_restart(self.delay, self.restart, ran_s)
        self.after_kill = True

    def wait(self, history: History, began: float, next_start: int, say: Callable[[str], None]) -> float:
        """Wait the delay if a kill came last, write `restart_delayed`; the seconds waited (0: none)."""
        if not self.after_kill:
            return 0.0
        self.after_kill = False
        seconds = self.delay.seconds(self.restart)
        if seconds <= 0:
            return 0.0
        waited_from = time.monotonic()
        say(f"start {next_start + 1} in {seconds:g}s (--restart-delay {self.delay}, restart {self.restart})")
        until = waited_from + seconds
        while (left := until - time.monotonic()) > 0:  # sleep may wake early on a signal: never wait less
            time.sleep(min(left, SAY_EVERY_S))
            if until - time.monotonic() > 0.5:
                say(f"start {next_start + 1} in {until - time.monotonic():.0f}s")
        waited = time.monotonic() - waited_from
        history.add("restart_delayed", waited_from - began, start=next_start, restart=self.restart, seconds=seconds,
                    waited_s=round(waited, 6), restart_delay=str(self.delay))
        return waited
