"""Holes: a lost record whose page the finished crawl treated as done (RocksDB's word for a recovered
store that lacks a write older than one it kept).

A record can be missing at the end for two reasons, which call for different fixes:
- the crawl never fetched its page (it stopped early, or lost the URL): `lost` alone;
- the crawl fetched the page, and the crawl finished without fetching it again though the record is
  not in the store: the progress survived and the result did not. The surviving store marks the page
  done (else the finished crawl would have fetched it), and no restart will ever repair it. A power
  cut makes such holes when progress is fsynced and the results are not (SQLite's synchronous=OFF
  beside a durable frontier); so does a design that commits its progress before its result.

Judged from the history alone: the requests of the final crawl, how that crawl ended, and the power
cuts and kills between the fetch and the end. Pure: no I/O.
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlsplit

from killtest.fixture_site.catalog import Catalog
from killtest.harness.check.categories import EXAMPLES, RecordSets, crawls_by_start
from killtest.harness.check.findings import Finding
from killtest.harness.check.verdict import CheckResult, judged
from killtest.harness.history import History


class _Evidence(Protocol):
    """What this check reads of killtest.harness.check.named_checks.Evidence."""

    @property
    def history(self) -> History: ...

    @property
    def catalog(self) -> Catalog: ...

    @property
    def records(self) -> RecordSets: ...


def hole_keys(history: History, lost: list[str], paths_by_key: dict[str, str]) -> dict[str, float]:
    """The lost keys whose page the final crawl fetched (200) and then finished without: key -> that fetch's time.

    Empty when the final crawl did not finish by itself (a liveness failure or a crash leaves pages
    unfetched for reasons of its own, which other checks report)."""
    finished = history.first("run_finished") or {}
    if finished.get("outcome", "completed") != "completed":
        return {}
    crawl_of = crawls_by_start(history)
    final = max(crawl_of.values(), default=1)
    fetched: dict[str, float] = {}
    for request in history.of_type("request"):
        # A fetch is an answer the crawler could read: not one written after its start was killed at it, after its
        # client hung up (`undelivered`), or to a start dead before the site read the request (`late`).
        if crawl_of.get(request.get("start", -1)) == final and request.get("status") == 200 \
                and not request.get("undelivered") and not request.get("late"):
            fetched[request["path"]] = request["t"]
    # A page the store still held leased when the crawl ended is not marked done: the crawl gave up on a
    # claim (`left_leases`), it did not skip a page it believed stored.
    exits = [e for e in history.of_type("process_exited") if crawl_of.get(e.get("start", -1)) == final]
    leases = (exits[-1].get("held_leases") or ()) if exits else ()
    held = {_page(lease) for lease in leases if isinstance(lease, str)}
    return {key: fetched[paths_by_key[key]] for key in lost
            if paths_by_key.get(key) in fetched and _page(paths_by_key[key]) not in held}


def _page(name: str) -> str:
    """A page's path, however it is named: `/product/3`, a whole URL (a lease as a recorded site's scraper
    stores it) or a recorded site's path, which quotes the whole URL (`/http://shop.test/product/3`)."""
    url = name[1:] if name.startswith(("/http://", "/https://")) else name
    return urlsplit(url).path if "://" in url else url


def holes(e: _Evidence) -> CheckResult:
    """No lost record whose page the finished crawl had fetched: the store must not mark done what it lost."""
    found = hole_keys(e.history, e.records.lost, e.catalog.paths_by_sku())
    if not found:
        return judged([], {"holes": 0})
    # The message names points, never times: the same exact schedule must give the same words on every
    # repeat (explore and fuzz compare them); the times are in the figures.
    first_fetch = min(found.values())
    keys = sorted(found)
    one = len(keys) == 1
    their = "its" if one else "their"
    cuts = [event for event in e.history.of_type("power_lost") if event["t"] >= first_fetch]
    kills = [event for event in e.history.of_type("kill") if event["t"] >= first_fetch]
    cause = (f"; a power cut{_named(cuts[0])} came after {their} fetch" if cuts else
             f"; a kill{_named(kills[0])} came after {their} fetch" if kills else
             f"; no kill came after {their} fetch")
    more = f" and {len(keys) - EXAMPLES} more" if len(keys) > EXAMPLES else ""
    message = (f"{len(keys)} lost record{'' if one else 's'} {'is a hole' if one else 'are holes'}"
               f" ({', '.join(keys[:EXAMPLES])}{more}): {their} page was fetched and the crawl finished without"
               " fetching it again, so the surviving store marks done a page whose record it does not hold"
               f"{cause}")
    return judged([(Finding.HOLE, message)], {"holes": len(keys), "last_hole_fetch_s": round(max(found.values()), 3)})


def _named(event: dict) -> str:
    """ (r5)": the point a kill or power cut came from, when the history names it."""
    point = event.get("point")
    return f" ({point})" if point else ""
