"""Sort a run's records and kills into Jepsen-style categories, from the history alone.

Records: lost (on the site, never stored), duplicated (stored more than once), unexpected (stored
with a value the site never showed, or not on the site at all). Kills: landed (SIGKILL reported by
the kernel, and the start had begun work), before work, or missed. The pages in flight at a kill
have an unknown outcome; they are recovered when a later start fetches them again. For a design
whose leases the harness can read, those are the pages the kill left newly leased (claimed, perhaps
fetched, not committed); for any other design, the last page its start requested.
"""

from __future__ import annotations

import signal
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from killtest.harness.defaults import FIRST_REQUEST_WAIT_S, STARTUP_MARGIN
from killtest.harness.errors import KilltestError
from killtest.harness.history import History

if TYPE_CHECKING:  # drift.py imports this module
    from killtest.harness.check.drift import Served

EXAMPLES = 5  # how many keys or paths of each category a verdict names
# Two stamps of one write (first written, last changed) may differ by a rounding; a rewrite is later.
CLOCK_SLACK_S = 0.001


def required_event(history: History, type_: str) -> dict:
    """The first event of a type every finished run's history holds (run_started, run_finished)."""
    found = history.first(type_)
    if found is None:
        raise KilltestError(f"the history has no {type_} event: it is not the history of a finished run")
    return found


@dataclass
class RecordSets:
    lost: list[str] = field(default_factory=list)
    duplicated: dict[str, int] = field(default_factory=dict)  # key -> rows stored for it
    wrong: list[str] = field(default_factory=list)  # on the site, stored with another value
    not_on_site: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # rows the store holds but that could not be read
    # Records the site never changed whose last change the design moved after their first write.
    rewritten_unchanged: list[str] = field(default_factory=list)
    # Records the site changed whose stored last change is older than the site's change.
    missed_change: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # wrong records the site had changed: an old value kept
    # Records the site removed after the final crawl was served their page: right to keep (drift.Served).
    removed_after_served: list[str] = field(default_factory=list)
    correct: int = 0
    rows: int = 0
    distinct: int = 0

    @property
    def unexpected(self) -> int:
        return len(self.wrong) + len(self.not_on_site)


def same_value(stored: str, shown: str) -> bool:
    """A stored value matches the site's when the text is equal, or both are the same number (12.5, "12.50")."""
    if stored == shown:
        return True
    try:
        return float(stored) == float(shown)
    except ValueError:
        return False


def sort_records(history: History, truth: dict[str, dict[str, str]],
                 site_changed: dict[str, float] | None = None, served: Served | None = None) -> RecordSets:
    """Sort the stored rows against the site's fields by key; only the fields a row holds are compared.

    `site_changed` holds, for each key the site changed during the run, when it last did. `served`
    (drift.served_to_final_crawl) is what the final crawl was served while the site changed under it:
    a record whose page it fetched is judged by the values that fetch may have seen, and by the last
    change it surely saw; a product it was never shown is not lost. Any other record is judged by
    `truth`, the site at the end.
    """
    site_changed = site_changed or {}
    served_fields = served.fields if served else {}
    judged = {key: [fields] for key, fields in truth.items()} | served_fields
    stored = [e for e in history.of_type("store_record") if e["key"] is not None]
    values: dict[str, list[dict]] = {}
    for record in stored:
        values.setdefault(record["key"], []).append(record["fields"])

    def shown(fields: dict, version: dict[str, str]) -> bool:
        return all(same_value(str(v), version.get(name, "")) for name, v in fields.items())

    def all_correct(key: str) -> bool:
        return all(any(shown(fields, version) for version in judged[key]) for fields in values[key])

    def change_seen(key: str) -> float | None:
        return served.change_t[key] if served and key in served.change_t else site_changed.get(key)

    rows_per_key = Counter(record["key"] for record in stored)
    return RecordSets(
        lost=sorted(set(truth) - set(values) - (served.unseen if served else set())),
        duplicated={k: n for k, n in sorted(rows_per_key.items()) if n > 1},
        wrong=sorted(k for k in values if k in judged and not all_correct(k)),
        not_on_site=sorted(set(values) - set(judged)),
        unreadable=[e.get("unreadable", "") for e in history.of_type("store_record") if e["key"] is None],
        # A change a design claims for a record the site never changed is a rewrite of unchanged content.
        rewritten_unchanged=sorted({r["key"] for r in stored if r.get("changed_t") is not None and r["stamped"]
                                    and r["changed_t"] > r["t"] + CLOCK_SLACK_S and r["key"] not in site_changed}),
        missed_change=sorted({r["key"] for r in stored if r.get("changed_t") is not None and r["stamped"]
                              and (seen := change_seen(r["key"])) is not None
                              and r["changed_t"] < seen - CLOCK_SLACK_S}),
        stale=sorted(k for k in values if k in judged and k in site_changed and not all_correct(k)),
        removed_after_served=sorted(set(values) & set(served_fields) - set(truth)),
        correct=sum(1 for k in values if k in judged and all_correct(k)),
        rows=len(history.of_type("store_record")), distinct=len(values))


@dataclass
class KillFinding:
    """One scheduled kill and what it hit."""

    start: int
    t: float
    returncode: int
    status: str  # landed | before_work | missed (the process had exited by itself: no SIGKILL delivered)
    in_flight: list[str]  # pages the start was working on; their outcome was unknown at the kill
    recovered: list[str]  # of those, the pages a later start fetched again
    off_aim: str = ""  # a store-write kill that landed on another write than its point names: why
    waiting: bool = False  # landed on a start past its measured start-up that had made no request: waiting, at work

    def to_json(self) -> dict:
        return asdict(self)


def did_work(history: History, start: int) -> bool:
    """The start made a request, or told the harness it was at work (anything past 'ready')."""
    return any(r["start"] == start for r in history.of_type("request")) or any(
        e["start"] == start and e["name"] != "ready" for e in history.of_type("scraper_event"))


def startup_allowed_s(history: History) -> float | None:
    """How long a start may take to its first request before its quiet is waiting, not start-up: the start-up
    measured before the runs (running/pace.py) with its margin; None when nothing was measured (built-in designs)."""
    measured = required_event(history, "run_started").get("measured_startup_s")
    return None if measured is None else measured * STARTUP_MARGIN


def _first_request_wait(point: str) -> float | None:
    """B of an `fD:B` kill point (faults/points/first_request.py): how long its start may take to its first
    request; None for any other point."""
    if not point.startswith("f"):
        return None
    if ":" not in point:
        return FIRST_REQUEST_WAIT_S
    try:
        return float(point.split(":", 1)[1].split("@", 1)[0])
    except ValueError:
        return None


def waiting_at(history: History, kill: dict) -> bool:
    """The kill came when its start was alive past the measured start-up, in a crawl an earlier start had begun:
    it was waiting (on what the killed start held: a lock, a lease, a queue), so the kill landed at work though
    the start had made no request yet. In a crawl nobody has begun, a start with no request is still starting
    (a loaded machine may take more than the margin), so its kill is before work."""
    allowed = startup_allowed_s(history)
    if allowed is None:  # a replay or a pinned run measures nothing; an `fD:B` point's wait B says the same
        allowed = _first_request_wait(kill.get("point", ""))
    started = next((e["t"] for e in history.of_type("process_started") if e["start"] == kill["start"]), None)
    if allowed is None or started is None or kill["t"] - started <= allowed:
        return False
    return any(r["start"] is not None and r["start"] < kill["start"] for r in history.of_type("request"))


def sort_kills(history: History) -> list[KillFinding]:
    requests = history.of_type("request")
    reads_leases = required_event(history, "run_started").get("reports_leases", False)
    crawl_of = crawls_by_start(history)
    findings: list[KillFinding] = []
    held_before: set[str] = set()
    for kill in history.of_type("kill"):
        # A redeploy (SIGTERM first) or a server restart ends the start however it exits (a worker whose
        # database vanished may exit with an error first); a plain SIGKILL must be the cause of death.
        forced = kill.get("signal") == "SIGTERM" or "server_restart_s" in kill
        if kill["returncode"] != -signal.SIGKILL and not forced:
            status = "missed"  # the process had already exited by itself
        else:  # delivered: a store-write kill off its aim (`aimed_elsewhere`) still crashed the start at a write
            status = "landed" if did_work(history, kill["start"]) or waiting_at(history, kill) else "before_work"
        held_now = set(kill.get("held_leases", []))
        if reads_leases:
            in_flight = sorted(held_now - held_before)
        else:  # its last request: of the killed worker's own process when the site could tell which
            own = [r["path"] for r in requests if r["start"] == kill["start"] and _made_by(r, kill)]
            in_flight = own[-1:]
        held_before = held_now
        fetched_later = {r["path"] for r in requests if crawl_of.get(r["start"]) == 1 and _after(r, kill)}
        findings.append(KillFinding(kill["start"], kill["t"], kill["returncode"], status, in_flight,
                                    [p for p in in_flight if p in fetched_later], kill.get("aimed_elsewhere", ""),
                                    status == "landed" and not did_work(history, kill["start"])))
    return findings


def _made_by(request: dict, kill: dict) -> bool:
    """`request` (of the kill's start) may have been made by what the kill hit: the whole start, or the
    one worker's process (by its pid when known; else any request before the kill)."""
    if kill.get("worker") is None:
        return True
    if kill.get("worker_pid") is not None and request.get("pid") is not None:
        return request["pid"] == kill["worker_pid"]
    return request["t"] <= kill["t"]


def _after(request: dict, kill: dict) -> bool:
    """Made after the kill: by a later start, or, when the kill hit one worker, by any worker after it.

    (When one worker of several is killed, the claims the others make meanwhile also count as newly
    held in its `held_leases`: its in-flight pages are an upper bound.)
    """
    if request["start"] is None:
        return False
    if kill.get("worker") is not None:
        return request["t"] > kill["t"]
    return request["start"] > kill["start"]


def crawls_by_start(history: History) -> dict[int, int]:
    """Which crawl each start belonged to: 1 for the killed crawl, 2 and up for re-crawls."""
    return {e["start"]: e.get("crawl", 1) for e in history.of_type("process_started")}


def fetched_again_after_commit(history: History, paths_by_key: dict[str, str]) -> list[str]:
    """Pages fetched again, in the same crawl, after the design had stored their record.

    A design that commits the record and the page's done mark together never does this; one that
    commits them apart refetches the page when a kill lands between the two.
    """
    crawl_of = crawls_by_start(history)
    written: dict[str, float] = {}
    for e in history.of_type("store_record"):
        if e["key"] in paths_by_key and e["stamped"]:
            path = paths_by_key[e["key"]]
            written[path] = min(e["t"], written.get(path, e["t"]))
    return sorted({r["path"] for r in history.of_type("request")
                   if r["path"] in written and r["t"] > written[r["path"]] + CLOCK_SLACK_S
                   and crawl_of.get(r["start"]) == 1})


def fetched_twice_by_one_start(history: History) -> list[str]:
    """Pages one start fetched more than once with no kill between: two of its workers held one page.

    A lease that ran out while its holder still worked lets a second worker claim the page. When a kill
    hit one worker of the start while the first fetch was under way, the second fetch is that page's
    honest retry; so is a fetch after one that met a network fault. Which worker made the first fetch
    is known exactly when the site could tell (a request's `pid`, a kill's `worker_pid`): only the
    killed worker's own fetch is excused, and only by a second fetch after the signal. A fetch the site
    credited to no worker, though it asks for each connection's worker (it named the killed one), may be the
    killed worker's: one sent before the kill and read only once its worker was dead (a loaded machine read
    one 0.3 ms after the worker's restart, when no live process held the connection), or one whose worker
    the site could not tell. It is excused by a later fetch after the signal. Where the site named no
    killed worker, by time: any fetch from the signal until the worker was dead and started again (a
    redeploy's worker may still send a request in its grace period).
    """
    restarts = history.of_type("worker_restarted")
    single_kills = []
    for kill in (k for k in history.of_type("kill") if k.get("worker") is not None):
        dead_by = min((r["t"] for r in restarts if r["start"] == kill["start"] and r["worker"] == kill["worker"]
                       and r["t"] >= kill["t"]), default=kill["t"])
        single_kills.append((kill["start"], kill["t"], dead_by, kill.get("worker_pid")))
    fetches: dict[tuple[int, str], list[dict]] = {}
    for r in history.of_type("request"):
        if r["start"] is not None:
            fetches.setdefault((r["start"], r["path"]), []).append(r)
    twice = set()
    for (start, path), made in fetches.items():
        for first, second in zip(made, made[1:]):
            if first.get("fault") is None and not any(
                    s == start and second["t"] >= signalled and _killed_fetch(first, dead_by, killed_pid)
                    for s, signalled, dead_by, killed_pid in single_kills):
                twice.add(path)
    return sorted(twice)


def _killed_fetch(request: dict, dead_by: float, killed_pid: int | None) -> bool:
    """`request` may have been made by the worker a kill hit: by its process when both are known; when the site
    named the killed worker but no worker for the request, maybe (see fetched_twice_by_one_start); else when it
    came in before the killed worker was dead."""
    if killed_pid is not None:
        return request.get("pid") is None or request["pid"] == killed_pid
    return request["t"] <= dead_by


def claim_stalls(history: History) -> dict[str, tuple[float, float]]:
    """For each page a kill left claimed: (when, seconds until a later start fetched it or the run ended).

    A lease or a job lock that outlives its killed holder keeps the page from everyone else; this is
    how long each one did.
    """
    end = required_event(history, "run_finished")["t"]
    requests = history.of_type("request")
    stalls: dict[str, tuple[float, float]] = {}
    for kill in history.of_type("kill"):
        for path in kill.get("held_leases", []):
            if path in stalls and stalls[path][0] + stalls[path][1] >= kill["t"]:
                continue  # still the same claim, left by an earlier kill
            fetched = [r["t"] for r in requests if r["path"] == path and _after(r, kill)]
            stalls[path] = (kill["t"], round((min(fetched) if fetched else end) - kill["t"], 3))
    return stalls
