"""Zombie writers, and what a pause (SIGSTOP for a while, then SIGCONT) excuses, from the history alone.

A worker paused past its lease (a GC pause, a frozen VM, a `p` point) wakes up still believing it holds
its page. If another worker claimed the page meanwhile and the woken one commits anyway, that commit is
a zombie write: with drift in between it can put back a value the site no longer shows (then
`wrong_value` finds it too). A fenced commit, one that succeeds only while the claim's token is still
the current one, refuses it.

Two kinds of evidence, either enough:
- what a design reports about its leases: `claimed` (path, lease_s, pid) and `committed` (path, pid)
  scraper events (harness/history.py). A writer is a start and, when the design prints it, a pid: two
  workers of one start are two writers. This sees every zombie write, harmless ones included;
- for any design, with drift: a record that holds a value the site had changed, whose page was fetched
  after the change, and whose last write (the design's own stamp) came after that fetch began. A write
  of what the page showed before the change landed after a fetch that saw the new value: a put-back,
  which only two writers on one page can make. `wrong_value` reports the stale value as well.

A pause is not a kill, but it costs what a kill of those workers costs: the page a paused worker held
is fetched again by whoever takes it over. `requests` allows that fetch and `fetched_twice_by_one_start`
excuses it here, the way a kill of one worker is excused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from killtest.fixture_site.catalog import Catalog
from killtest.harness.check.categories import (
    CLOCK_SLACK_S,
    EXAMPLES,
    RecordSets,
    did_work,
    fetched_twice_by_one_start,
    required_event,
)
from killtest.harness.check.drift import site_change_times
from killtest.harness.check.findings import Finding
from killtest.harness.check.verdict import CheckResult, judged
from killtest.harness.history import History

# A pause of every worker of a start stands in as a kill of "worker 0": the excuse reads only its start and times.
_EVERY_WORKER = 0


@dataclass(frozen=True)
class ZombieWrite:
    """One commit by a writer whose lease had run out, of a page another writer had claimed since."""

    path: str
    writer: str
    claimed_t: float
    lease_until: float
    committed_t: float
    taken_by: str  # the writer that claimed the page after the lease ran out
    taken_t: float
    overwrote: bool  # the new holder had already committed the page: the zombie wrote over a newer write


def _writer(event: dict) -> str:
    return f"start {event['start'] + 1}" + (f" pid {event['pid']}" if event.get("pid") is not None else "")


def zombie_writes(history: History) -> list[ZombieWrite]:
    """Every commit made after its writer's lease on that page ran out and another writer claimed the page."""
    default_lease_s = float(required_event(history, "run_started").get("lease_s", 0.0))
    events = [e for e in history.of_type("scraper_event") if e["name"] in ("claimed", "committed") and "path" in e]
    found = []
    for commit in (e for e in events if e["name"] == "committed"):
        writer, path = _writer(commit), commit["path"]
        own = [e for e in events if e["name"] == "claimed" and e["path"] == path and _writer(e) == writer
               and e["t"] <= commit["t"]]
        if not own:
            continue  # a commit with no claim reported: nothing to judge it by
        claim = own[-1]
        until = claim["t"] + float(claim.get("lease_s", default_lease_s))
        if commit["t"] <= until:
            continue
        others = [e for e in events if e["path"] == path and _writer(e) != writer and claim["t"] < e["t"] < commit["t"]]
        taken = [e for e in others if e["name"] == "claimed"]
        if taken:
            found.append(ZombieWrite(path, writer, claim["t"], round(until, 6), commit["t"], _writer(taken[0]),
                                     taken[0]["t"], any(e["name"] == "committed" for e in others)))
    return found


def put_backs(history: History, stale: list[str], paths_by_sku: dict[str, str]) -> list[str]:
    """Stale records (the site changed them; the store holds an older value) last written after a fetch of
    their page had begun that saw the change: an old value written over the new one. Records without
    the design's own write stamps cannot be timed, so they are not judged."""
    changed = site_change_times(history)
    # The version that changed each SKU last: a fetch answered from it saw the change, even one that arrived
    # a moment before it (an aimed pause reprices a page as the taker's request for it arrives).
    version_of = {sku: change["version"] for change in sorted(history.of_type("catalog_changed"), key=lambda e: e["t"])
                  for sku in change["changed"] + change["added"]}
    fetches: dict[str, list[float]] = {}
    answered: dict[str, list[tuple[float, int]]] = {}
    for r in history.of_type("request"):
        if r["status"] == 200 and not r.get("fault"):
            fetches.setdefault(r["path"], []).append(r["t"])
            if r.get("version") is not None:
                answered.setdefault(r["path"], []).append((r["t"], r["version"]))
    last_write: dict[str, float] = {}
    for record in history.of_type("store_record"):
        if record["key"] is not None and record.get("stamped"):
            written = record["changed_t"] if record.get("changed_t") is not None else record["t"]
            last_write[record["key"]] = max(written, last_write.get(record["key"], written))
    found = []
    for key in stale:
        if key not in changed or key not in paths_by_sku or key not in last_write:
            continue
        path = paths_by_sku[key]
        saw_new = [t for t in fetches.get(path, []) if t > changed[key]] + [
            t for t, version in answered.get(path, []) if version >= version_of.get(key, version + 1)]
        if saw_new and last_write[key] > min(saw_new) + CLOCK_SLACK_S:
            found.append(key)
    return found


def pauses_past_the_lease(history: History) -> list[tuple[dict, dict]]:
    """(paused, resumed) of each pause that can have let another writer take a page over: it stopped one
    worker of several, of a start at work, for longer than the run's lease. Any other pause (every worker
    at once, one worker alone, or shorter than the lease) gives nobody the chance: it proves nothing about
    fencing and excuses no request."""
    started = history.first("run_started") or {}
    lease_s, workers = started.get("lease_s"), started.get("workers") or 1
    found = []
    for paused, resumed in zip(history.of_type("paused"), history.of_type("resumed")):
        if workers < 2 or paused.get("worker") is None or not paused.get("pids"):
            continue
        if lease_s is not None and resumed.get("seconds", 0.0) <= lease_s:
            continue
        if did_work(history, paused["start"]):
            found.append((paused, resumed))
    return found


def pauses_landed(history: History) -> int:
    """Pauses that count as a fault that landed (pauses_past_the_lease)."""
    return len(pauses_past_the_lease(history))


def paused_workers(history: History) -> int:
    """Workers stopped past the lease: each may leave one claimed page for another worker to fetch again."""
    return sum(len(p.get("pids", [])) for p, _ in pauses_past_the_lease(history))


def fetched_twice_not_by_a_pause(history: History) -> list[str]:
    """`fetched_twice_by_one_start`, with a page fetched again while its fetcher was paused excused, as a
    page fetched again while its fetcher was being killed alone is: each pause stands in for a kill of
    its worker (every worker: one no restart names), from SIGSTOP until SIGCONT."""
    stand_ins = []
    for paused, resumed in pauses_past_the_lease(history):
        worker = paused.get("worker") or _EVERY_WORKER
        stand_ins.append({"type": "kill", "t": paused["t"], "start": paused["start"], "worker": worker})
        stand_ins.append({"type": "worker_restarted", "t": resumed["t"], "start": paused["start"], "worker": worker})
    return fetched_twice_by_one_start(History(history.events + stand_ins))


def refetches_by_woken_workers(history: History, paths_by_sku: dict[str, str]) -> set[str]:
    """Pages fetched again after their record was stored only by a woken worker's first such fetch.

    A worker paused between its claim and its fetch sends that fetch when it wakes, though the page was
    taken over and stored meanwhile; it cannot know it slept (a fenced design refuses the commit that
    follows). Per pause, the earliest refetch of the paused start after SIGCONT is excused for each
    worker it stopped; any other refetch of the page still counts."""
    stored_at: dict[str, float] = {}
    for e in history.of_type("store_record"):
        if e["key"] in paths_by_sku and e.get("stamped"):
            path = paths_by_sku[e["key"]]
            stored_at[path] = min(e["t"], stored_at.get(path, e["t"]))
    refetches = [r for r in history.of_type("request")
                 if r["path"] in stored_at and r["t"] > stored_at[r["path"]] + CLOCK_SLACK_S]
    excused: list[dict] = []
    for paused, resumed in pauses_past_the_lease(history):
        woken = [r for r in refetches if r["start"] == paused["start"] and r["t"] >= resumed["t"]]
        excused += woken[:len(paused.get("pids", []))]
    return {path for path in {r["path"] for r in excused}
            if all(any(r is e for e in excused) for r in refetches if r["path"] == path)}


class _Evidence(Protocol):
    """What this check reads of killtest.harness.check.named_checks.Evidence."""

    @property
    def history(self) -> History: ...

    @property
    def catalog(self) -> Catalog: ...

    @property
    def records(self) -> RecordSets: ...


def zombie_writers(e: _Evidence) -> CheckResult:
    """No commit after its lease ran out and another worker claimed the page (a design that reports its claims)."""
    zombies = zombie_writes(e.history)
    put_back = put_backs(e.history, e.records.stale, e.catalog.paths_by_sku())
    figures = {"zombie_writes": len(zombies), "put_backs": len(put_back), "pauses": len(e.history.of_type("paused"))}
    messages = []
    if zombies:
        first = zombies[0]
        overwrote = sum(z.overwrote for z in zombies)
        figures["zombie_overwrites"] = overwrote
        paths = ", ".join(sorted({z.path for z in zombies})[:EXAMPLES])
        messages.append(
            f"{len(zombies)} zombie writes ({paths}): committed after the writer's lease ran out and another"
            f" worker claimed the page; {first.writer} claimed {first.path} at {first.claimed_t:.3f}s, its lease"
            f" ran out at {first.lease_until:.3f}s, {first.taken_by} claimed it at {first.taken_t:.3f}s, and"
            f" {first.writer} still committed at {first.committed_t:.3f}s"
            + (f"; {overwrote} of them wrote over the new holder's commit" if overwrote else ""))
    if put_back:
        examples = ", ".join(put_back[:EXAMPLES])
        messages.append(f"{len(put_back)} records put back a value the site had changed ({examples}): written"
                        " after a fetch that saw the change, by a writer that fetched before it")
    return judged([(Finding.ZOMBIE_WRITE, "; ".join(messages))] if messages else [], figures)
