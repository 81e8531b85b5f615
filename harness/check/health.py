"""The article's health metric: requests per stored record, and a warning when it rises.

"Watch the repeat rate: requests per stored record is a cheap health metric; when it rises, it
signals crash or lease problems" (seeds/000, practical rules). A record here is a distinct product
in the store, not a row: the naive design's duplicate rows would otherwise hide its repeats. A full
crawl of the article's site is 525 requests for 500 records, 1.05; each re-crawl adds as much again,
so the figure is per crawl.
"""

from __future__ import annotations


def requests_per_record(requests: int, distinct_records: int, crawls: int = 1) -> float | None:
    """Requests per distinct stored record and crawl; None when nothing was stored (no rate per zero records)."""
    if not distinct_records:
        return None
    return round(requests / distinct_records / max(1, crawls), 3)


def health_warning(design: str, run: int, value: float | None, threshold: float) -> str | None:
    if value is None or value <= threshold:
        return None
    return (f"WARNING: {design} run {run}: {value:g} requests per stored record, above the health threshold"
            f" {threshold:g} (crashes, lease trouble or retries cost fetches)")
