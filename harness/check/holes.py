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
        if crawl_of.get(request.get("start", -1)) == final and request.get("status") == 200:
            fetched[request["path"]] = request["t"]
    # A page the store still held leased when the crawl ended is not marked done: the crawl gave up on a
    # claim (`left_leases`), it did not skip a page it believed stored.
    exits = [e for e in history.of_type("process_exited") if crawl_of.get(e.get("start", -1)) == final]
    held = set(exits[-1].get("held_leases") or ()) if exits else set()
    return {key: fetched[paths_by_key[key]] for key in lost
            if paths_by_key.get(key) in fetched and paths_by_key[key] not in held}


def holes(e: _Evidence) -> CheckResult:
    """No lost record whose page the finished crawl had fetched: the store must not mark done what it lost."""
    found = hole_keys(e.history, e.records.lost, e.catalog.paths_by_sku())
    if not found:
        return judged([], {"holes": 0})
    last_fetch = max(found.values())
    cuts = [event["t"] for event in e.history.of_type("power_lost") if event["t"] >= min(found.values())]
    kills = [event["t"] for event in e.history.of_type("kill") if event["t"] >= min(found.values())]
    cause = (f"; a power cut at {cuts[0]:.3f}s came after their fetch" if cuts else
             f"; a kill at {kills[0]:.3f}s came after their fetch" if kills else
             "; no kill came after their fetch")
    keys = sorted(found)
    more = f" and {len(keys) - EXAMPLES} more" if len(keys) > EXAMPLES else ""
    message = (f"{len(keys)} lost records are holes ({', '.join(keys[:EXAMPLES])}{more}): their page was fetched"
               f" (the last of them at {last_fetch:.3f}s) and the crawl finished without fetching it again, so the"
               f" surviving store marks done a page whose record it does not hold{cause}")
    return judged([(Finding.HOLE, message)], {"holes": len(keys)})
