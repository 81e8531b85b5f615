"""Count one run's figures from its history and the site's ground truth: the verdict before it is judged.

Every figure is derived from the categories in killtest.harness.check.categories, not counted a second way;
the named checks (killtest.harness.check.named_checks) then read these figures and decide what was broken.
"""

from __future__ import annotations

import statistics
from collections import Counter

from killtest.fixture_site.catalog import Catalog
from killtest.harness.check.categories import (
    EXAMPLES,
    KillFinding,
    RecordSets,
    claim_stalls,
    crawls_by_start,
    fetched_again_after_commit,
    fetched_twice_by_one_start,
    required_event,
    sort_kills,
    startup_allowed_s,
)
from killtest.harness.check.drift import all_paths_by_sku, minimum_requests
from killtest.harness.check.health import requests_per_record
from killtest.harness.check.landed_points import landed_schedule
from killtest.harness.check.network_faults import early_after_throttle, fault_counts, faulted_paths
from killtest.harness.check.verdict import RunVerdict
from killtest.harness.history import History


def count_figures(design: str, run: int, history: History, versions: list[Catalog],
                  records: RecordSets) -> RunVerdict:
    """The verdict's figures, not yet judged; `versions` are the catalogs the site served, first to last."""
    started = required_event(history, "run_started")
    finished = required_event(history, "run_finished")
    requests = history.of_type("request")
    first_catalog, catalog = versions[0], versions[-1]  # the store must match the site at the end
    kills = sort_kills(history)
    landed = [k for k in kills if k.status == "landed"]
    landed_events = [e for e in history.of_type("kill") if e["start"] in {k.start for k in landed}]
    crawl_of = crawls_by_start(history)
    crawls = 1 + started.get("recrawls", 0)
    served_per_crawl_and_path = Counter((crawl_of.get(r["start"], 1), r["path"]) for r in requests)
    waits = [e for e in history.of_type("scraper_event") if e["name"] == "lease_wait"]
    exits = history.of_type("process_exited")
    # `lost` means missing from a crawl that finished: what a crawl stopped by the time limit or for making
    # no progress had not stored yet it might still have stored, so it is counted apart (`liveness` reports it).
    unfinished = finished["outcome"] == "timed_out"
    return RunVerdict(
        design=design, run=run, seed=started["seed"],
        kills=len(landed), kills_planned=len(started["kill_points"]),
        kills_not_delivered=len(started["kill_points"]) - len(kills),
        kills_before_work=sum(k.status == "before_work" for k in kills),
        kills_missed=sum(k.status == "missed" for k in kills),
        kills_while_waiting=sum(k.waiting for k in kills),
        # For a design whose leases the harness reads, a kill's in-flight pages are the ones it left newly leased.
        kills_between_lease_and_commit=sum(1 for k in landed if k.in_flight) if started.get("reports_leases") else 0,
        kills_during_lease_wait=_kills_during_lease_wait(landed_events, waits),
        rows=records.rows, distinct_records=records.distinct, correct_records=records.correct,
        wrong_records=len(records.wrong), missing_records=0 if unfinished else len(records.lost),
        not_stored_unfinished=len(records.lost) if unfinished else 0,
        unexpected_records=records.unexpected, duplicated_records=len(records.duplicated),
        requests=len(requests), minimum_requests=minimum_requests(first_catalog, history, crawls),
        repeated_requests=len(requests) - len(served_per_crawl_and_path),
        paths_fetched_again=sum(1 for n in served_per_crawl_and_path.values() if n > 1),
        in_flight_at_kills=sum(len(k.in_flight) for k in landed),
        recovered=sum(len(k.recovered) for k in landed),
        duplicate_ratio=round(records.rows / len(catalog.products), 4),
        wall_s=finished["wall_s"], outcome=finished["outcome"], scraper_s=finished.get("scraper_s", 0.0),
        startup_s=_median_startup(history), request_rate=_request_rate(history),
        lease_waits=len(waits), lease_wait_s=round(sum(e.get("seconds", 0.0) for e in waits), 3),
        crawls=crawls, workers=started.get("workers", 1), unreadable_rows=len(records.unreadable),
        rewritten_unchanged=len(records.rewritten_unchanged),
        refetched_after_commit=len(fetched_again_after_commit(history, all_paths_by_sku(versions))),
        fetched_twice_by_one_start=len(fetched_twice_by_one_start(history)),
        leases_left_at_exit=sorted({p for e in exits if e["returncode"] == 0 for p in e.get("held_leases", [])}),
        longest_claim_stall_s=max((seconds for _, seconds in claim_stalls(history).values()), default=0.0),
        categories=_categories(records, kills, unfinished), kill_findings=[k.to_json() for k in kills],
        requests_per_record=requests_per_record(len(requests), records.distinct, crawls),
        faults=fault_counts(history), faulted_requests=sum(1 for r in requests if r.get("fault")),
        retries=sum(1 for e in history.of_type("scraper_event") if e["name"] == "retry"),
        lost_after_fault=0 if unfinished else len(set(catalog.paths_by_sku()[sku] for sku in records.lost)
                                                  & faulted_paths(history)),
        early_after_throttle=early_after_throttle(history),
        site_changes=len(history.of_type("catalog_changed")), missed_changes=len(records.missed_change),
        stale_records=len(records.stale), landed_schedule=landed_schedule(history))


def _categories(records: RecordSets, kills: list[KillFinding], unfinished: bool) -> dict:
    """Counts per category with a few examples of each, for the report and for a person debugging; the records
    an unfinished crawl had not stored are `not_stored_unfinished`, never `lost`."""
    landed = [k for k in kills if k.status == "landed"]
    unknown = [path for k in landed for path in k.in_flight]
    recovered = [path for k in landed for path in k.recovered]
    return {
        "lost": {"count": 0, "examples": []} if unfinished else
        {"count": len(records.lost), "examples": records.lost[:EXAMPLES]},
        "not_stored_unfinished": {"count": len(records.lost) if unfinished else 0,
                                  "examples": records.lost[:EXAMPLES] if unfinished else []},
        "duplicated": {"count": len(records.duplicated), "extra_rows": sum(n - 1 for n in records.duplicated.values()),
                       "examples": list(records.duplicated)[:EXAMPLES]},
        "unexpected": {"count": records.unexpected, "examples": (records.wrong + records.not_on_site)[:EXAMPLES]},
        "unreadable": {"count": len(records.unreadable), "examples": records.unreadable[:EXAMPLES]},
        "rewritten_unchanged": {"count": len(records.rewritten_unchanged),
                                "examples": records.rewritten_unchanged[:EXAMPLES]},
        "recovered": {"count": len(recovered), "examples": recovered[:EXAMPLES]},
        "outcome_unknown_at_kill": {"count": len(unknown), "examples": unknown[:EXAMPLES]},
    }


def _kills_during_lease_wait(kills: list[dict], naps: list[dict]) -> int:
    return sum(1 for k in kills
               if any(n["start"] == k["start"] and n["t"] <= k["t"] <= n["t"] + n.get("seconds", 0) for n in naps))


def _median_startup(history: History) -> float | None:
    started_at = {e["start"]: e["t"] for e in history.of_type("process_started")}
    first_request: dict[int, float] = {}
    for r in history.of_type("request"):
        first_request.setdefault(r["start"], r["t"])
    delays = [first_request[s] - t for s, t in started_at.items() if s in first_request]
    # A first request later than the measured start-up came after a wait (on a lock, a queue): waiting, not start-up.
    allowed = startup_allowed_s(history)
    delays = [d for d in delays if allowed is None or d <= allowed]
    return round(statistics.median(delays), 4) if delays else None


def _request_rate(history: History) -> float | None:
    """Requests per second between the first and the last request of each start, over all starts."""
    times_per_start: dict[int, list[float]] = {}
    for r in history.of_type("request"):
        times_per_start.setdefault(r["start"], []).append(r["t"])
    spans = [(len(ts) - 1, ts[-1] - ts[0]) for ts in times_per_start.values() if len(ts) > 1]
    busy_s = sum(span for _, span in spans)
    return round(sum(n for n, _ in spans) / busy_s, 1) if busy_s > 0 else None
