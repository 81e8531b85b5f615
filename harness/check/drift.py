"""What the site's content drift means for a run's checks, read from the history.

A run whose site drifted has `catalog_changed` events; the catalog the store must match at the end
is the last version, rebuilt from the first one with the same seed (catalog_versions). A record the site changed must
carry a last change no earlier than the site's; one it never changed must not have moved.
"""

from __future__ import annotations

from killtest.fixture_site.catalog import Catalog, drifted, parse_drift
from killtest.harness.history import History


def catalog_versions(catalog: Catalog, history: History) -> list[Catalog]:
    """Every catalog the site served in the run, first to last (just `catalog` when it never drifted)."""
    versions = [catalog]
    started = history.first("run_started")
    if started and started.get("drift"):
        drift = parse_drift(started["drift"], started.get("drift_seed") or 0)
        for change in sorted(history.of_type("catalog_changed"), key=lambda e: e["version"]):
            versions.append(drifted(versions[-1], drift, change["version"]))
    return versions


def site_change_times(history: History) -> dict[str, float]:
    """For each SKU the site changed or added during the run, when it last did (history time)."""
    times: dict[str, float] = {}
    for change in history.of_type("catalog_changed"):
        for sku in change["changed"] + change["added"]:
            times[sku] = max(change["t"], times.get(sku, change["t"]))
    return times


def all_paths_by_sku(versions: list[Catalog]) -> dict[str, str]:
    """Every product's path in any version the run served, by SKU."""
    return {sku: path for catalog in versions for sku, path in catalog.paths_by_sku().items()}


def minimum_requests(first: Catalog, history: History, crawls: int) -> int:
    """The fewest requests for the run's crawls: each crawl's catalog as it began, plus the products the
    site added while a crawl was under way (their listing may have been fetched after the change)."""
    started_crawls = {e.get("crawl", 1): e["t"] for e in reversed(history.of_type("process_started"))}
    total = 0
    full = first.full_crawl_requests
    changes = sorted(history.of_type("catalog_changed"), key=lambda e: e["t"])
    for crawl in range(1, crawls + 1):
        begins = started_crawls.get(crawl)
        ends = started_crawls.get(crawl + 1, float("inf"))
        before = [c for c in changes if begins is not None and c["t"] <= begins]
        during = [c for c in changes if begins is not None and begins < c["t"] < ends]
        crawl_full = before[-1]["full_crawl_requests"] if before else full
        total += crawl_full + sum(len(c["added"]) for c in during)
    return total
