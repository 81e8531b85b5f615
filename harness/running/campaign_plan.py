"""What one campaign runs, and where its results go: the plan `run_campaign` carries out.

Commands build plans (run, replay, scale, calibrate, and the bench's parts); the orchestrator
(killtest.harness.running.orchestrator) runs them through its phases.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from killtest.fixture_site.catalog import Catalog
from killtest.fixture_site.toxics import Toxics
from killtest.harness import defaults
from killtest.harness.check.baseline import Thresholds
from killtest.harness.design.model import Design
from killtest.harness.faults.schedule import KillSchedule
from killtest.harness.running.runner import RunSettings


@dataclass(frozen=True)
class CampaignPlan:
    """What one campaign runs, and where its results go."""

    command: str
    designs: tuple[Design, ...]
    schedules: tuple[KillSchedule, ...]  # run r uses schedules[r - 1], the same for every design
    catalog: Catalog
    settings: RunSettings
    out_dir: str
    name: str
    latency_s: float = 0.0
    pace_rps: float = 0.0  # the site serves at most this many requests a second; 0: as fast as it can
    slow_pages: tuple[tuple[str, float], ...] = ()  # (path, seconds its answer takes)
    work_dir: str | None = None
    plot: bool = True
    page: bool = False  # the triage page NAME.html even without plots (`run`); with plots it is always written
    all_timelines: bool = False  # a timeline for every run, not only firsts and failures
    prefork: bool = False  # fork each start from a process that imported the design once
    check_faster: bool = False  # fail unless idempotent designs beat the naive control in total wall time
    seed: int | None = None  # the base seed of timed schedules, for the record
    kill_delay_s: tuple[float, float] | None = None
    baseline_runs: tuple[dict, ...] = ()  # the runs of a saved campaign to compare with (harness/check/baseline.py)
    thresholds: Thresholds = Thresholds()
    toxics: Toxics | None = None  # network faults the site injects (killtest.fixture_site.toxics)
    toxic_seed: int = 1  # run r rolls its faults with toxic_seed + r - 1, the same for every design
    health_threshold: float = defaults.HEALTH_THRESHOLD  # warn above this many requests per stored record
    # The pace measured before the killed runs of a user's design, and the figures made of it (running/pace.py).
    measured_pace: dict | None = None
    # design name -> the `killtest replay` line of each run, in run order, when the command can print one
    replays: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def _kill_delay_sums(self) -> list[float] | None:
        if self.seed is None or not self.schedules:
            return None
        sums = []
        for schedule in self.schedules:
            total = 0.0
            for point in schedule.points:
                delay = getattr(point, "delay_s", None)
                if not isinstance(delay, float):
                    return None  # not every point is a delay after the start
                total += delay
            sums.append(round(total, 4))
        return sums

    def describe(self) -> dict:
        return {"designs": [d.name for d in self.designs], "runs": len(self.schedules),
                "kills": self.schedules[0].kills if self.schedules else 0,
                "schedule": None if self.seed is not None else (self.schedules[0].spec if self.schedules else ""),
                "seed": self.seed, "kill_delay_s": list(self.kill_delay_s) if self.kill_delay_s else None,
                # Run r's kill delays summed (schedules[r - 1]), for a campaign of timed schedules: the report
                # reads the naive walls' floor from them (harness/report/sections.py, every published column).
                "kill_delay_sums_s": self._kill_delay_sums(),
                "lease_s": self.settings.lease_s, "latency_s": self.latency_s, "pace_rps": self.pace_rps,
                "drift": self.settings.drift.spec if self.settings.drift else None,
                "drift_during_s": self.settings.drift_during_s,
                "slow_pages": dict(self.slow_pages), "toxics": self.toxics.spec if self.toxics else None,
                "toxic_seed": self.toxic_seed if self.toxics else None, "recrawls": self.settings.recrawls,
                "workers": self.settings.workers, "restart_delay": str(self.settings.restart_delay),
                "disk": self.settings.disk.name if self.settings.disk else None,
                "products": len(self.catalog.products), "full_crawl_requests": self.catalog.full_crawl_requests,
                "time_limit_s": self.settings.time_limit_s, "health_threshold": self.health_threshold,
                "measured_pace": self.measured_pace,
                "replays": {design: list(lines) for design, lines in self.replays},
                "cpus": os.cpu_count(),
                "python": sys.version.split()[0]}
