"""Watching a start while the runner waits for it: how it is doing, and whether it is stuck.

A hung scraper used to cost the whole time limit (120 s a run) in silence. While the runner waits
for a start, it looks every half second at what shows progress: a request the site served, a byte the
start wrote to its output, a change to the store's file. After `no_progress_s` of none, the start is
stuck (`Stalled`): the runner stops it and the run fails for liveness, saying so. Every few seconds
of a long wait it says how the start is doing, so a person watching sees it move.

Time spent waiting for a CPU is not time without progress. On a loaded machine (a CI runner, a suite's
background step at SCHED_IDLE beside normal-priority work) a start can get no core for half a minute while
doing nothing wrong: a fresh-clone CI here stopped a correct crawl "for making no progress" after 30 s of
that. So the watch counts the seconds the start, or the harness serving its site, waited for a CPU (its
cgroup's cpu.pressure `some` total, killtest.harness.cgroups.Box.cpu_wait_s, and how late the harness's own
look came) and takes them off the idle time; the runner moves the run's deadline by them too, at most once
the time limit over (killtest.harness.running.runner). A hung start waits for nothing, so it is still
stopped after `no_progress_s`; a start spinning on a CPU it never gets ends at the stretched deadline.

Nor is time spent waiting on the site. A start whose request the site holds on purpose (a `--slow-page`, the
latency toxics, a timeout toxic's hold) is waiting for the site, not stuck: the idle time counts from the end of
the site's last such hold of a request that came in by the start's own door (fixture_site/request_log.py
RequestLog.holding), so a killed start's slow request, still held after its kill, does not keep the next one
from being stopped. A case with a 10 s slow page needed a no-progress timeout over 10 s before, for the
restarted start that fetches that page again; a hung start was then given all of it.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from killtest.harness.running.processes import Start

LOOK_EVERY_S = 0.5
SAY_EVERY_S = 5.0
# A slice of the wait that came back this much later than asked was the harness waiting for a CPU (a start's wait
# wakes at its processes' exit or the slice's end, running/exit_wait.py: an idle machine's overrun is a wake-up's).
LATE_AFTER_S = 0.05


class Stalled(Exception):
    """The start made no progress for `idle_s` seconds."""

    def __init__(self, idle_s: float) -> None:
        super().__init__(f"no progress for {idle_s:g}s")
        self.idle_s = idle_s


class StartWatch:
    """What moved since the start began; `look()` raises Stalled once nothing has for `no_progress_s`."""

    def __init__(self, start: Start, requests_served: Callable[[], int], store_file: str | None,
                 no_progress_s: float | None, say: Callable[[str], None],
                 site_held: Callable[[], float | None] = lambda: None) -> None:
        self.start, self._requests, self._store_file = start, requests_served, store_file
        self._site_held = site_held  # the last moment the site held an answer of this start's on purpose
        self.no_progress_s, self._say = no_progress_s, say
        self._began = time.monotonic()
        self._last_change = self._began
        self._last_said = self._began
        self._requests_at_start = requests_served()
        self._seen = self._signature()
        self.starved_s = 0.0  # seconds the start or the harness waited for a CPU while watched
        self._starved_at_change = 0.0
        self._cpu_waits = self._cpu_wait_by_box()

    def _cpu_wait_by_box(self) -> dict[str, float]:
        waits = {}
        for worker in self.start.workers:
            if worker.box is not None and (waited := worker.box.cpu_wait_s()) is not None:
                waits[worker.box.name] = waited
        return waits

    def count_starved(self, interval_s: float, harness_late_s: float) -> None:
        """Add what the last `interval_s` spent waiting for a CPU: the longest wait of a worker's cgroup in it,
        or how late the harness came back, whichever is more, never more than the interval."""
        waits = self._cpu_wait_by_box()
        box_s = max((waited - self._cpu_waits[name] for name, waited in waits.items() if name in self._cpu_waits),
                    default=0.0)
        self._cpu_waits = waits
        self.starved_s += min(max(interval_s, 0.0), max(box_s, harness_late_s, 0.0))

    def _signature(self) -> tuple:
        sizes = []
        for worker in self.start.workers:
            for path in (worker.stdout_path, worker.stderr_path):
                sizes.append(_size(path))
        store = None
        if self._store_file:
            try:
                status = os.stat(self._store_file)
                store = (status.st_size, status.st_mtime_ns)
            except OSError:
                pass
        return self._requests(), tuple(sizes), store

    def look(self) -> None:
        now = time.monotonic()
        seen = self._signature()
        if seen != self._seen:
            self._seen, self._last_change, self._starved_at_change = seen, now, self.starved_s
        held = self._site_held()
        if held is not None and held > self._last_change:  # waiting on the site's slow answer is not idleness
            self._last_change, self._starved_at_change = min(held, now), self.starved_s
        starved_s = self.starved_s - self._starved_at_change  # since the last change: not idleness
        idle_s = max(0.0, now - self._last_change - starved_s)
        if now - self._last_said >= SAY_EVERY_S:
            self._last_said = now
            idle = f", nothing new for {idle_s:.0f}s" if idle_s >= SAY_EVERY_S else ""
            limit = f" (stopped after {self.no_progress_s:g}s of none)" if idle and self.no_progress_s else ""
            waited = f", {self.starved_s:.0f}s of it waiting for a CPU" if self.starved_s >= 1 else ""
            self._say(f"start {self.start.index + 1} running {now - self._began:.0f}s{waited}:"
                      f" {seen[0] - self._requests_at_start} requests{idle}{limit}")
        if self.no_progress_s is not None and idle_s >= self.no_progress_s:
            raise Stalled(round(idle_s, 1))


    def stop_fields(self, stop: Exception) -> dict:
        """What the `time_limit` event says of a stop: how long without progress, if that was it, and the seconds
        waited for a CPU meanwhile."""
        return {**({"no_progress_s": stop.idle_s} if isinstance(stop, Stalled) else {}),
                **({"cpu_wait_s": round(self.starved_s, 1)} if self.starved_s >= 0.1 else {})}


@dataclass
class CpuWaits:
    """A run's seconds waiting for a CPU, its starts' or the harness's while it watched them, and how far they
    moved its deadline: at most its time limit over, so a start spinning on a core it never gets still ends."""

    limit_s: float
    waited_s: float = 0.0
    moved_s: float = 0.0

    def stretch_s(self) -> float:
        """How much longer a wait bounded by the deadline may still be made."""
        return max(0.0, self.limit_s - self.moved_s)

    def take(self, watch: StartWatch) -> float:
        """Add a watched start's waits; the seconds they move the run's deadline."""
        moved = min(watch.starved_s, self.stretch_s())
        self.waited_s += watch.starved_s
        self.moved_s += moved
        return moved


def wait_watching(start: Start, timeout_s: float, watch: StartWatch, stretch_s: float = 0.0) -> int:
    """`start.wait(timeout_s)` in slices, looking at the start between them (Stalled if it is stuck).

    With `stretch_s` (a wait bounded by the run's deadline, not by a kill point's delay: a timed kill comes at
    its wall-clock time, loaded machine or not) the wait is longer by the seconds spent waiting for a CPU, at
    most `stretch_s` longer."""
    began = time.monotonic()

    def until() -> float:  # moves as the start waits for a CPU, up to stretch_s
        return began + timeout_s + min(stretch_s, watch.starved_s)

    while True:
        sliced = time.monotonic()
        asked = max(0.0, min(LOOK_EVERY_S, until() - sliced))
        try:
            return start.wait(asked)
        except subprocess.TimeoutExpired:
            took = time.monotonic() - sliced
            watch.count_starved(took, took - asked - LATE_AFTER_S)
            if time.monotonic() >= until():
                raise
            watch.look()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return -1
