"""Watching a start while the runner waits for it: how it is doing, and whether it is stuck.

A hung scraper used to cost the whole time limit (120 s a run) in silence. While the runner waits
for a start, it looks every half second at what shows progress: a request the site served, a byte the
start wrote to its output, a change to the store's file. After `no_progress_s` of none, the start is
stuck (`Stalled`): the runner stops it and the run fails for liveness, saying so. Every few seconds
of a long wait it says how the start is doing, so a person watching sees it move.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable

from killtest.harness.running.processes import Start

LOOK_EVERY_S = 0.5
SAY_EVERY_S = 5.0


class Stalled(Exception):
    """The start made no progress for `idle_s` seconds."""

    def __init__(self, idle_s: float) -> None:
        super().__init__(f"no progress for {idle_s:g}s")
        self.idle_s = idle_s


class StartWatch:
    """What moved since the start began; `look()` raises Stalled once nothing has for `no_progress_s`."""

    def __init__(self, start: Start, requests_served: Callable[[], int], store_file: str | None,
                 no_progress_s: float | None, say: Callable[[str], None]) -> None:
        self.start, self._requests, self._store_file = start, requests_served, store_file
        self.no_progress_s, self._say = no_progress_s, say
        self._began = time.monotonic()
        self._last_change = self._began
        self._last_said = self._began
        self._requests_at_start = requests_served()
        self._seen = self._signature()

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
            self._seen, self._last_change = seen, now
        idle_s = now - self._last_change
        if now - self._last_said >= SAY_EVERY_S:
            self._last_said = now
            idle = f", nothing new for {idle_s:.0f}s" if idle_s >= SAY_EVERY_S else ""
            limit = f" (stopped after {self.no_progress_s:g}s of none)" if idle and self.no_progress_s else ""
            self._say(f"start {self.start.index + 1} running {now - self._began:.0f}s:"
                      f" {seen[0] - self._requests_at_start} requests{idle}{limit}")
        if self.no_progress_s is not None and idle_s >= self.no_progress_s:
            raise Stalled(round(idle_s, 1))


def wait_watching(start: Start, timeout_s: float, watch: StartWatch) -> int:
    """`start.wait(timeout_s)` in slices, looking at the start between them (Stalled if it is stuck)."""
    until = time.monotonic() + timeout_s
    while True:
        try:
            return start.wait(max(0.0, min(LOOK_EVERY_S, until - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= until:
                raise
            watch.look()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return -1
