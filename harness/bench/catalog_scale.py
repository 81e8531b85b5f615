"""The idempotent design as the catalog grows: 500 to 100,000 products, killed and resumed at each size."""

from __future__ import annotations

import os
import statistics

from killtest.fixture_site.catalog import build_catalog
from killtest.harness import defaults
from killtest.harness.bench.frontier_cost import frontier_seconds_per_page
from killtest.harness.bench.site_rate import measure
from killtest.harness.design.model import Design
from killtest.harness.faults.points.request import AtRequest
from killtest.harness.faults.schedule import KillSchedule
from killtest.harness.history import History
from killtest.harness.report.writer import history_path
from killtest.harness.running.campaign_plan import CampaignPlan
from killtest.harness.running.orchestrator import run_campaign, site_phase
from killtest.harness.running.progress import Progress
from killtest.harness.running.runner import RunSettings

PER_PAGE = defaults.PER_PAGE  # 20 products a listing page, as on the article's site
SITE_RATE_S = 3.0  # how long the sequential client measures the site's ceiling


def kills_at_quarters(full_crawl_requests: int, kills: int) -> KillSchedule:
    """`kills` SIGKILLs, each after a 1/(kills + 1) share of the crawl: the same shape at every size."""
    step = max(1, full_crawl_requests // (kills + 1))
    return KillSchedule(seed=None, points=tuple(AtRequest(step) for _ in range(kills)))


def pace_at_the_ends(history_file: str) -> tuple[float, float]:
    """The median gap between requests over the crawl's first and last tenth, in ms: whether a page
    costs more once the frontier and the store are full (medians step over kills and lease waits)."""
    gaps = [b - a for a, b in zip(*(lambda ts: (ts, ts[1:]))(
        sorted(e["t"] for e in History.read_jsonl(history_file).of_type("request"))))]
    tenth = max(1, len(gaps) // 10)
    return round(1000 * statistics.median(gaps[:tenth]), 3), round(1000 * statistics.median(gaps[-tenth:]), 3)


def run_scale(design: Design, sizes: list[int], kills: int, lease_s: float, out_dir: str, work_dir: str | None,
              command: str, progress: Progress) -> list[dict]:
    """One killed crawl per catalog size, unpaced, and at each size the site's ceiling and the frontier's cost."""
    rows = []
    for products in sizes:
        catalog = build_catalog(max(1, products // PER_PAGE), PER_PAGE)
        progress.step(f"[scale {len(catalog.products):,} products] measuring the site's ceiling")
        with site_phase(catalog) as site:
            paths = [p.path for p in catalog.products[:: max(1, len(catalog.products) // 200)]]
            site_rps = measure(site.base_url, paths, SITE_RATE_S)
        progress.step(f"[scale {len(catalog.products):,} products] timing the frontier alone")
        frontier_s = frontier_seconds_per_page(len(catalog.products), PER_PAGE, work_dir)
        directory = os.path.join(out_dir, f"scale-{len(catalog.products)}")
        os.makedirs(os.path.join(directory, "history"), exist_ok=True)
        plan = CampaignPlan(command=command, designs=(design,),
                            schedules=(kills_at_quarters(catalog.full_crawl_requests, kills),), catalog=catalog,
                            settings=RunSettings(lease_s=lease_s, time_limit_s=3600.0), out_dir=directory,
                            name="scale", pace_rps=0.0, plot=False, work_dir=work_dir)
        [verdict] = run_campaign(plan, progress).verdicts
        first_ms, last_ms = pace_at_the_ends(history_path(directory, "scale", design.name, 1))
        crawling_s = verdict.wall_s - verdict.lease_wait_s
        rows.append({"design": design.name, "products": len(catalog.products),
                     "full_crawl_requests": catalog.full_crawl_requests, "kills": verdict.kills,
                     "rows": verdict.rows, "correct": verdict.correct_records, "lost": verdict.missing_records,
                     "requests": verdict.requests, "repeated_requests": verdict.repeated_requests,
                     "wall_s": verdict.wall_s, "lease_wait_s": verdict.lease_wait_s,
                     "ms_per_page": round(1000 * crawling_s / verdict.requests, 3),
                     "frontier_ms_per_page": round(1000 * frontier_s, 3),
                     "first_tenth_ms": first_ms, "last_tenth_ms": last_ms,
                     "site_ceiling_rps": site_rps, "site_ms_per_page": round(1000 / site_rps, 3),
                     "findings": verdict.findings})
        progress.done(f"[scale {len(catalog.products):,} products] {rows[-1]['ms_per_page']} ms a page"
                      f" (frontier {rows[-1]['frontier_ms_per_page']} ms, the site's ceiling"
                      f" {rows[-1]['site_ms_per_page']} ms), {verdict.rows} rows, {verdict.correct_records} correct")
    return rows
