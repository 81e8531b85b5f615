"""What the site's content drift means for a run's checks, read from the history.

A run whose site drifted has `catalog_changed` events; the catalog the store must match at the end
is the last version, rebuilt from the first one with the same seed (catalog_versions). A record the site changed must
carry a last change no earlier than the site's; one it never changed must not have moved.

Within a crawl the site may change under it: a record is then judged by what the final crawl was
served (served_to_final_crawl): the catalog version the site logged answering its page's last fetch
(a request's `version`; in a hand-made history without one, the version live when it arrived).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from killtest.fixture_site.catalog import Catalog, Product, drifted, parse_drift
from killtest.harness.check.categories import crawls_by_start
from killtest.harness.history import History


def catalog_versions(catalog: Catalog, history: History) -> list[Catalog]:
    """Every catalog the site served in the run, first to last (just `catalog` when it never drifted)."""
    versions = [catalog]
    started = history.first("run_started") or {}
    drift = parse_drift(started["drift"], started.get("drift_seed") or 0) if started.get("drift") else None
    for change in sorted(history.of_type("catalog_changed"), key=lambda e: e["version"]):
        if change.get("aimed") is not None:  # an aimed pause repriced the pages a paused worker held
            versions.append(repriced(versions[-1], change["aimed"]))
        elif drift is not None:
            versions.append(drifted(versions[-1], drift, change["version"]))
    return versions


def repriced(catalog: Catalog, prices: dict[str, str]) -> Catalog:
    """`catalog` with the products of `prices` (by SKU) at those prices: what an aimed change serves."""
    return Catalog(tuple(Product(p.index, p.sku, prices.get(p.sku, p.price)) for p in catalog.products),
                   catalog.products_per_page)


def a_new_price(price: str) -> str:
    """A price other than `price`, the same for the same price: one more unit."""
    return f"{float(price) + 1:.2f}"


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


@dataclass
class Served:
    """What the final crawl was served while the site drifted under it, per product (by SKU).

    `fields`: for each product whose page the final crawl fetched (200, no fault), the values its last
    such fetch was answered with, and those of a faulted 200 after it (a truncated page). `change_t`:
    for those, the product's last change that answer held (None: none). `unseen`: products of the
    final catalog that appeared or moved to another listing page while the final crawl ran and that it
    was never surely shown: on no listing page it fetched, its page never served, and their listing
    page one it fetched or was never linked to; none at all when the crawl skipped a listing page it
    was linked to (then a product that moved there is lost by the design's own doing).
    """

    fields: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    change_t: dict[str, float | None] = field(default_factory=dict)
    unseen: set[str] = field(default_factory=set)


def served_to_final_crawl(versions: list[Catalog], history: History) -> Served | None:
    """What the final crawl was served (Served), or None when the site never changed.

    Only the final crawl's fetches count: a re-crawl must follow every change made before it began."""
    changes = sorted(history.of_type("catalog_changed"), key=lambda e: e["version"])
    if not changes or len(versions) != len(changes) + 1:
        return None
    begins = [c["t"] for c in changes]  # version i is live from begins[i - 1] on (version 0 from the start)
    crawl_of = crawls_by_start(history)
    final = max(crawl_of.values(), default=1)
    began = min((e["t"] for e in history.of_type("process_started") if e.get("crawl", 1) == final), default=0.0)
    by_path = [{p.path: p for p in v.products} for v in versions]
    shown: set[str] = set()
    fetched_pages: set[int] = set()
    requested_pages: set[int] = set()  # listing pages the final crawl asked for, whatever the answer (a 404 too)
    linked_pages = {0}
    # sku -> (when its page was last served to the final crawl, the version that answer came from, the product)
    last_seen: dict[str, tuple[float, int, Product]] = {}
    faulted: list[tuple[float, Product]] = []  # product pages answered 200 with a fault (a truncated page)
    for r in history.of_type("request"):
        if r["start"] is None or crawl_of.get(r["start"], 1) != final:
            continue
        page = _listing_page(r["path"])
        if page is not None and not r.get("fault"):
            requested_pages.add(page)
        if r["status"] != 200:
            continue
        version = r["version"] if r.get("version") is not None else bisect_right(begins, r["t"])
        if page is None and r["path"] in by_path[version]:
            product = by_path[version][r["path"]]
            if r.get("fault"):
                faulted.append((r["t"], product))
            elif r["t"] >= last_seen.get(product.sku, (float("-inf"),))[0]:
                last_seen[product.sku] = (r["t"], version, product)
        elif page is not None and not r.get("fault"):
            fetched_pages.add(page)
            shown |= {p.sku for p in _listed(versions[version], page)}
            if versions[version].listing_pages > page + 1:
                linked_pages.add(page + 1)
    served = Served()
    for sku, (last, version, product) in last_seen.items():
        # A faulted answer after it (a truncated page is still a 200) may be what the design parsed last.
        served.fields[sku] = [product.fields()] + [p.fields() for t, p in faulted if t >= last and p.sku == sku]
        # version v holds the changes before it: 0 .. v-1
        served.change_t[sku] = max((c["t"] for c in changes[:version] if sku in c["changed"] + c["added"]),
                                   default=None)
    pages = [{p.sku: n // v.products_per_page for n, p in enumerate(v.products)} for v in versions]
    during = range(bisect_right(begins, began), len(versions))  # the versions live while the final crawl ran
    if not linked_pages <= requested_pages:
        return served  # the crawl skipped a listing page it was linked to: what it lost is its own doing
    for sku, page in pages[-1].items():
        moved = any(pages[i].get(sku) != page for i in during)
        if moved and sku not in shown and sku not in last_seen and (page in fetched_pages or page not in linked_pages):
            served.unseen.add(sku)
    return served


def _listing_page(path: str) -> int | None:
    head, _, number = path.rpartition("/")
    return int(number) if head == "/list" and number.isdigit() else None


def _listed(catalog: Catalog, page: int) -> list:
    """The products listing page `page` shows in `catalog` (none when it has no such page)."""
    return catalog.listing(page)[0] if 0 <= page < catalog.listing_pages else []
