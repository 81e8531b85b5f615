"""The harness's own cost: how much of a campaign's wall time is spent outside the scrapers under test.

A campaign's clock splits its time into phases (starting the site and servers, the runs, checking
and writing after each run, stopping, the final plots). Inside a run, the scrapers' own time is
what their starts lived, spawn to reap (killtest.harness.running.processes.Start.alive_s); everything else in a run
is the harness too: spawning, reaping, reading the store.
"""

from __future__ import annotations

import time


class PhaseClock:
    """Adds the time since the previous lap to the named phase."""

    def __init__(self) -> None:
        self._last = time.monotonic()
        self.totals: dict[str, float] = {}

    def lap(self, phase: str) -> None:
        now = time.monotonic()
        self.totals[phase] = round(self.totals.get(phase, 0.0) + now - self._last, 4)
        self._last = now


def overhead_breakdown(campaign: dict, total_s: float) -> dict:
    """Where a finished command's `total_s` went, from its killtest.json: seconds per part and the ratio.

    `total_s` is measured outside the command (from before its interpreter started to its exit), so
    the interpreter's start-up and the imports count as the harness's time too.
    """
    timing = campaign.get("timing", {})
    scraper_s = sum(run.get("scraper_s", 0.0) for run in campaign["runs"])
    in_runs_s = timing.get("runs_s", 0.0)
    measured = sum(timing.values())
    parts = {
        "interpreter, imports and arguments": total_s - measured,
        "site, store servers and design start": timing.get("setup_s", 0.0),
        "spawn, kill, reap and store reads inside runs": in_runs_s - scraper_s,
        "checking and result files after each run": timing.get("checks_s", 0.0),
        "stopping the site and servers": timing.get("teardown_s", 0.0),
        "comparisons, plots and the summary page": timing.get("finish_s", 0.0),
    }
    harness_s = total_s - scraper_s
    return {"total_s": round(total_s, 3), "scraper_s": round(scraper_s, 3), "harness_s": round(harness_s, 3),
            "ratio": round(harness_s / total_s, 4) if total_s else 0.0,
            "parts": {name: round(seconds, 3) for name, seconds in parts.items()}}
