"""The article's health metric: requests per stored record, and a warning when it rises.

"Watch the repeat rate: requests per stored record is a cheap health metric; when it rises, it
signals crash or lease problems" (seeds/000, practical rules). A record here is a distinct product
in the store, not a row: the naive design's duplicate rows would otherwise hide its repeats. A full
crawl of the article's site is 525 requests for 500 records, 1.05; each re-crawl adds as much again,
so the figure is per crawl.

A shop's own perfect crawl sets its floor: its listing pages plus its products, over its products (12 / 10 = 1.2
on a 2 x 5 shop, where the article's 1.25 would leave no room). So the threshold is read as the article's: the
warning fires above it scaled by this shop's perfect crawl against the article's 1.05. A warning names what the
run shows that raises the figure (records lost: fewer to divide by; kills: a killed start's pages fetched again;
retries), and none is given for a design whose spec waives bounded_requests: it promised nothing of its requests.
"""

from __future__ import annotations

from collections.abc import Iterable

from killtest.harness.promises import Promise

ARTICLE_REQUESTS, ARTICLE_PRODUCTS = 525, 500  # the article's shop: 25 listing pages of 20 products


def requests_per_record(requests: int, distinct_records: int, crawls: int = 1) -> float | None:
    """Requests per distinct stored record and crawl; None when nothing was stored (no rate per zero records)."""
    if not distinct_records:
        return None
    return round(requests / distinct_records / max(1, crawls), 3)


def perfect_words(full_crawl_requests: int, products: int) -> str:
    """`525 / 500 = 1.05`: a shop's perfect crawl, its listing pages plus its products over its products."""
    return f"{full_crawl_requests} / {products} = {round(full_crawl_requests / max(1, products), 3):g}"


def health_limit(threshold: float, full_crawl_requests: int, products: int) -> float:
    """The figure above which a run is warned of: the threshold (the article's) scaled by this shop's perfect crawl."""
    scale = (full_crawl_requests / max(1, products)) / (ARTICLE_REQUESTS / ARTICLE_PRODUCTS)
    return round(threshold * scale, 3)


def health_warning(design: str, run: int, verdict, threshold: float, full_crawl_requests: int = ARTICLE_REQUESTS,
                   products: int = ARTICLE_PRODUCTS, waived: Iterable[Promise] = ()) -> str | None:
    """The warning for a run (a check.verdict.RunVerdict, or anything with its figures) whose requests per stored
    record went above the scaled threshold; None below it, with nothing stored, or when the spec waives
    bounded_requests."""
    value = verdict.requests_per_record
    limit = health_limit(threshold, full_crawl_requests, products)
    if value is None or value <= limit or Promise.BOUNDED_REQUESTS in set(waived):
        return None
    perfect = perfect_words(full_crawl_requests, products)
    above = (f"the health threshold {threshold:g} (a perfect crawl of this shop is {perfect})" if limit == threshold
             else f"{limit:g}, the health threshold {threshold:g} scaled to this shop's perfect crawl ({perfect},"
                  f" the article's {perfect_words(ARTICLE_REQUESTS, ARTICLE_PRODUCTS)})")
    return f"WARNING: {design} run {run}: {value:g} requests per stored record, above {above}: {causes(verdict)}"


def causes(verdict) -> str:
    """What the run shows that raises its requests per stored record, or that it shows none."""
    lost = verdict.missing_records + getattr(verdict, "not_stored_unfinished", 0)
    seen = [f"{lost} record{'s' if lost != 1 else ''} not stored (fewer records to divide by)" if lost else "",
            f"{verdict.kills} kill{'s' if verdict.kills != 1 else ''} (each may cost its start's pages again)"
            if verdict.kills else "",
            f"{verdict.retries} retr{'ies' if verdict.retries != 1 else 'y'}" if getattr(verdict, "retries", 0) else ""]
    named = [cause for cause in seen if cause]
    return ", ".join(named) if named else "no lost record, kill or retry in this run explains it"
