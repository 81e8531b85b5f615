"""Peers under the same kills: our designs beside Scrapy and Crawlee, scenario by scenario."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from killtest.fixture_site.catalog import Catalog
from killtest.harness.check.verdict import RunVerdict
from killtest.harness.design.model import Design
from killtest.harness.faults.schedule import (
    KillSchedule,
    redeploy_schedule,
    request_schedule,
    run_seeds,
    timed_schedule,
)
from killtest.harness.running.campaign_plan import CampaignPlan
from killtest.harness.running.orchestrator import run_campaign
from killtest.harness.running.progress import Progress
from killtest.harness.running.runner import RunSettings

# Kill a start at its 20th to 150th request: past every framework's start-up, before a start at the
# article's pace could finish the 525-request crawl alone.
KILL_REQUESTS = (20, 150)
# Redeploys come 1-2 s after a start, past Scrapy's and Crawlee's start-up (about 0.9 s here), and
# leave 5 s to stop cleanly: Kubernetes gives 30, this site's in-flight requests need well under one.
REDEPLOY_DELAY_S = (1.0, 2.0)
REDEPLOY_GRACE_S = 5.0


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str  # one line for the report
    schedule: Callable[[int], KillSchedule]  # seed -> the run's schedule, the same for every design


def peer_scenarios(kills: int) -> list[Scenario]:
    return [
        Scenario("sigkill-timed", f"{kills} SIGKILLs 0.2-1.0 s after each start (the article's schedule)",
                 lambda seed: timed_schedule(seed, kills)),
        Scenario("sigkill-at-request", f"{kills} SIGKILLs, each at a start's {KILL_REQUESTS[0]}th to"
                                       f" {KILL_REQUESTS[1]}th request",
                 lambda seed: request_schedule(seed, kills, *KILL_REQUESTS)),
        Scenario("redeploy", f"{kills} redeploys: SIGTERM {REDEPLOY_DELAY_S[0]:g}-{REDEPLOY_DELAY_S[1]:g} s after"
                             f" each start, SIGKILL {REDEPLOY_GRACE_S:g} s later if still running",
                 lambda seed: redeploy_schedule(seed, kills, *REDEPLOY_DELAY_S, REDEPLOY_GRACE_S)),
    ]


def run_peers(designs: list[Design], scenarios: list[Scenario], runs: int, seed: int, catalog: Catalog,
              pace_rps: float, lease_s: float, out_dir: str, command: str, progress: Progress) -> list[dict]:
    """Every design on every scenario's seeded schedules; one row per design and scenario."""
    rows = []
    for scenario in scenarios:
        directory = os.path.join(out_dir, f"peers-{scenario.name}")
        os.makedirs(os.path.join(directory, "history"), exist_ok=True)
        plan = CampaignPlan(command=command, designs=tuple(designs),
                            schedules=tuple(scenario.schedule(s) for s in run_seeds(seed, runs)), catalog=catalog,
                            settings=RunSettings(lease_s=lease_s, time_limit_s=300.0), out_dir=directory,
                            name="peers", pace_rps=pace_rps, plot=False, seed=seed)
        campaign = run_campaign(plan, progress)
        rows += [peer_row(scenario, design.name, campaign.of_design(design.name), len(catalog.products))
                 for design in designs]
    return rows


def peer_row(scenario: Scenario, design: str, runs: list[RunVerdict], products: int) -> dict:
    def span(values: list) -> list:
        return [min(values), max(values)]

    return {"scenario": scenario.name, "scenario_text": scenario.what, "design": design, "runs": len(runs),
            "rows": span([v.rows for v in runs]), "rows_per_product": round(statistics.mean(v.rows for v in runs)
                                                                             / products, 3),
            "duplicated_records": span([v.duplicated_records for v in runs]),
            "lost": span([v.missing_records for v in runs]), "wrong": span([v.wrong_records for v in runs]),
            "unreadable": span([v.unreadable_rows for v in runs]), "requests": span([v.requests for v in runs]),
            "repeated_requests": span([v.repeated_requests for v in runs]),
            "kills_landed": sum(v.kills for v in runs), "kills_planned": sum(v.kills_planned for v in runs),
            "kills_before_work": sum(v.kills_before_work for v in runs),
            "wall_s": round(statistics.mean(v.wall_s for v in runs), 2),
            "findings": sorted({f for v in runs for f in v.findings})}
