"""Run a campaign: every design on the same schedules against one fixture site, checking as it goes."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass

from fixture_site.catalog import Catalog
from fixture_site.server import SiteServer
from fixture_site.toxics import Toxics
from harness.check.baseline import Thresholds, compare
from harness.report.campaign import Campaign
from harness.check.checker import check_run, compare_designs, per_run_wins
from harness.design.model import Design
from harness.check.health import DEFAULT_HEALTH_THRESHOLD, health_warning
from harness.running.phase_clock import PhaseClock
from harness.running.prefork import Zygote
from harness.running.progress import Progress
from harness.report.writer import history_path, write_json, write_results
from harness.running.runner import RunSettings, run_kill_test
from harness.faults.schedule import KillSchedule
from harness.servers.for_stores import StoreServers


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
    all_timelines: bool = False  # a timeline for every run, not only firsts and failures
    prefork: bool = False  # fork each start from a process that imported the design once
    check_faster: bool = False  # fail unless idempotent designs beat the naive control in total wall time
    seed: int | None = None  # the base seed of timed schedules, for the record
    kill_delay_s: tuple[float, float] | None = None
    baseline_runs: tuple[dict, ...] = ()  # the runs of a saved campaign to compare with (harness/check/baseline.py)
    thresholds: Thresholds = Thresholds()
    toxics: Toxics | None = None  # network faults the site injects (fixture_site.toxics)
    toxic_seed: int = 1  # run r rolls its faults with toxic_seed + r - 1, the same for every design
    health_threshold: float = DEFAULT_HEALTH_THRESHOLD  # warn above this many requests per stored record

    def describe(self) -> dict:
        return {"designs": [d.name for d in self.designs], "runs": len(self.schedules),
                "kills": self.schedules[0].kills if self.schedules else 0,
                "schedule": None if self.seed is not None else (self.schedules[0].spec if self.schedules else ""),
                "seed": self.seed, "kill_delay_s": list(self.kill_delay_s) if self.kill_delay_s else None,
                "lease_s": self.settings.lease_s, "latency_s": self.latency_s, "pace_rps": self.pace_rps,
                "drift": self.settings.drift.spec if self.settings.drift else None,
                "drift_during_s": self.settings.drift_during_s,
                "slow_pages": dict(self.slow_pages), "toxics": self.toxics.spec if self.toxics else None,
                "toxic_seed": self.toxic_seed if self.toxics else None, "recrawls": self.settings.recrawls,
                "workers": self.settings.workers,
                "products": len(self.catalog.products), "full_crawl_requests": self.catalog.full_crawl_requests,
                "time_limit_s": self.settings.time_limit_s, "health_threshold": self.health_threshold, "cpus": os.cpu_count(),
                "python": sys.version.split()[0]}


def run_campaign(plan: CampaignPlan, progress: Progress) -> Campaign:
    """Every run of every design on the plan's schedules; results are rewritten after each run."""
    campaign = Campaign(command=plan.command, settings=plan.describe())
    designs_by_name = {d.name: d for d in plan.designs}
    runs = len(plan.schedules)
    clock = PhaseClock()
    try:
        with SiteServer(plan.catalog, latency_s=plan.latency_s, slow_paths=dict(plan.slow_pages),
                        pace_rps=plan.pace_rps) as site, StoreServers(plan.designs) as servers, \
                contextlib.ExitStack() as stack:
            # Only a Python design can be pre-forked; any other program starts afresh every time.
            launchers = {d.name: stack.enter_context(Zygote(d)) for d in plan.designs
                         if plan.prefork and d.module is not None}
            clock.lap("setup_s")
            for run, schedule in enumerate(plan.schedules, start=1):
                for design in plan.designs:
                    label = f"[{design.name} run {run}/{runs} " + (
                        f"seed {schedule.seed}]" if schedule.seed is not None else f"schedule {schedule.spec}]")
                    site.set_toxics(plan.toxics, plan.toxic_seed + run - 1)  # the dice start afresh for every design
                    with tempfile.TemporaryDirectory(prefix="killtest-", dir=plan.work_dir) as work_dir:
                        history = run_kill_test(design, schedule, site, work_dir, plan.settings,
                                                on_progress=lambda m, label=label: progress.step(f"{label} {m}"),
                                                launcher=launchers.get(design.name), dsn=servers.dsn_for(design),
                                                restart_store=servers.restarter_for(design))
                    clock.lap("runs_s")
                    history.write_jsonl(history_path(plan.out_dir, plan.name, design.name, run))
                    verdict = check_run(design, run, history, plan.catalog)
                    campaign.verdicts.append(verdict)
                    progress.done(_one_line(label, verdict))
                    warning = health_warning(design.name, run, verdict.requests_per_record, plan.health_threshold)
                    if warning:
                        campaign.health_warnings.append(warning)
                        progress.done(warning)
                    write_results(campaign, plan.out_dir, plan.name, plot=False)
                    clock.lap("checks_s")
        clock.lap("teardown_s")
        campaign.comparison_figures = per_run_wins(campaign.verdicts, designs_by_name)
        if plan.check_faster:
            campaign.comparison_problems = compare_designs(campaign.verdicts, designs_by_name)
        if plan.baseline_runs:
            campaign.baseline_diffs = compare(list(plan.baseline_runs), [v.to_json() for v in campaign.verdicts],
                                              {d.name: d.claims_idempotence for d in plan.designs}, plan.thresholds)
        campaign.complete = True
    finally:
        # Whatever stopped the campaign, the runs that finished are kept, whole.
        write_results(campaign, plan.out_dir, plan.name, plot=plan.plot, all_timelines=plan.all_timelines)
        clock.lap("finish_s")
        campaign.timing = clock.totals
        write_json(campaign, plan.out_dir, plan.name)  # again, now with the final timing
    return campaign


def _one_line(label: str, v) -> str:
    status = "ok" if v.valid else "FAIL: " + "; ".join(v.problems)
    return (f"{label} rows {v.rows} ({v.duplicate_ratio:.2f}/product), correct {v.correct_records},"
            f" missing {v.missing_records}, requests {v.requests} ({v.requests_per_record:g}/record), kills {v.kills}/{v.kills_planned},"
            f" wall {v.wall_s:.2f}s: {status}")
