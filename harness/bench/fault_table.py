"""Each fault against each design: network toxics, a slow page, content drift and side effects.

One run per cell, on the article's site at its pace, with three SIGKILLs at seeded request counts
on top of the fault, so every cell is also a kill test. A cell is what the checker found.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from killtest.fixture_site.catalog import Catalog, Drift
from killtest.fixture_site.toxics import parse_toxics
from killtest.harness import defaults
from killtest.harness.design.model import Design
from killtest.harness.faults.schedule import request_schedule
from killtest.harness.running.campaign_plan import CampaignPlan
from killtest.harness.running.orchestrator import run_campaign
from killtest.harness.running.progress import Progress
from killtest.harness.running.runner import RunSettings

FAULT_DESIGNS = ("naive", "idempotent", "queue-bullmq", "scrapy-jobdir", "crawlee-fs")
EFFECT_DESIGNS = ("naive-effects", "idempotent-effects")
KILLS = 3
LEASE_S = defaults.LEASE  # the article's 3 s lease: the slow page is one second longer


@dataclass(frozen=True)
class Fault:
    name: str
    what: str
    toxics: str = ""
    slow_page_s: float | None = None  # /product/7 takes this long, with two workers sharing one store
    drift: Drift | None = None
    side_effects: bool = False


FAULTS = (
    Fault("latency", "every answer 5 ms late, ±4 ms", "latency=0.005,jitter=0.004"),
    Fault("slow page", f"/product/7 takes {LEASE_S + 1:g} s, longer than the {LEASE_S:g} s lease (BullMQ: its 2 s"
                       " lock); two workers on one store",
          slow_page_s=LEASE_S + 1),
    Fault("5xx", "5% of requests answered 503", "error=0.05"),
    Fault("429", "3% answered 429 with Retry-After: 1", "throttle=0.03,retry_after=1"),
    Fault("reset", "5% of connections dropped before any answer", "reset=0.05"),
    Fault("truncated", "5% of pages cut in half behind an honest Content-Length", "truncate=0.05"),
    Fault("timeout", "2% held 1 s without a byte, then dropped", "timeout=0.02,hold=1"),
    Fault("drift", "10% repriced, 2% removed, 2% added: before a re-crawl, or 1 s into the crawl for a design"
                   " that cannot re-crawl", drift=Drift(changed=0.1, removed=0.02, added=0.02, seed=1)),
    Fault("side effects", "images, webhooks and a counter", side_effects=True),
)


def cell_plan(fault: Fault, design: Design, seed: int, catalog: Catalog, pace_rps: float, out_dir: str,
              command: str) -> tuple[CampaignPlan | None, str]:
    """The plan for one cell, or None and why the fault does not apply to the design."""
    settings = RunSettings(lease_s=LEASE_S, time_limit_s=defaults.BENCH_FAULT_TIME_LIMIT_S)
    slow: tuple[tuple[str, float], ...] = ()
    if fault.slow_page_s is not None:
        if not design.claims_idempotence:  # two naive or framework crawlers are two crawls, not two workers
            return None, "n/a: one worker per store"
        settings = replace(settings, workers=2)
        slow = (("/product/7", fault.slow_page_s),)
    if fault.drift is not None:
        settings = replace(settings, drift=fault.drift, recrawls=1) if design.can_recrawl else \
            replace(settings, drift=fault.drift, drift_during_s=1.0)
    plan = CampaignPlan(command=command, designs=(design,), schedules=(request_schedule(seed, KILLS, 20, 150),),
                        catalog=catalog, settings=settings, out_dir=out_dir,
                        name=f"faults-{fault.name.replace(' ', '-')}",
                        pace_rps=pace_rps, slow_pages=slow, plot=False, seed=seed,
                        toxics=parse_toxics(fault.toxics) if fault.toxics else None, toxic_seed=seed)
    return plan, ""


def run_faults(designs: list[Design], effect_designs: list[Design], seed: int, catalog: Catalog, pace_rps: float,
               out_dir: str, command: str, progress: Progress) -> list[dict]:
    directory = os.path.join(out_dir, "faults")
    os.makedirs(os.path.join(directory, "history"), exist_ok=True)
    cells = []
    for fault in FAULTS:
        for design in effect_designs if fault.side_effects else designs:
            plan, why = cell_plan(fault, design, seed, catalog, pace_rps, directory, command)
            if plan is None:
                cells.append({"fault": fault.name, "what": fault.what, "design": design.name, "applies": False,
                              "note": why})
                continue
            [verdict] = run_campaign(plan, progress).verdicts
            cells.append({"fault": fault.name, "what": fault.what, "design": design.name, "applies": True,
                          "findings": verdict.findings, "problems": verdict.problems, "rows": verdict.rows,
                          "correct": verdict.correct_records, "lost": verdict.missing_records,
                          "requests": verdict.requests, "faulted_requests": verdict.faulted_requests,
                          "retries": verdict.retries, "kills": verdict.kills, "wall_s": verdict.wall_s,
                          "side_effects": verdict.side_effects})
    return cells
