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

from harness.history import History

EXAMPLES = 5  # how many keys or paths of each category a verdict names


@dataclass
class RecordSets:
    lost: list[str] = field(default_factory=list)
    duplicated: dict[str, int] = field(default_factory=dict)  # key -> rows stored for it
    wrong: list[str] = field(default_factory=list)  # on the site, stored with another value
    not_on_site: list[str] = field(default_factory=list)
    correct: int = 0
    rows: int = 0
    distinct: int = 0

    @property
    def unexpected(self) -> int:
        return len(self.wrong) + len(self.not_on_site)


def sort_records(history: History, truth: dict[str, str]) -> RecordSets:
    stored = [(e["key"], e["value"]) for e in history.of_type("store_record")]
    values: dict[str, set[str]] = {}
    for key, value in stored:
        values.setdefault(key, set()).add(value)
    rows_per_key = Counter(key for key, _ in stored)
    return RecordSets(
        lost=sorted(set(truth) - set(values)),
        duplicated={k: n for k, n in sorted(rows_per_key.items()) if n > 1},
        wrong=sorted(k for k, v in values.items() if k in truth and v != {truth[k]}),
        not_on_site=sorted(set(values) - set(truth)),
        correct=sum(1 for k, v in values.items() if k in truth and v == {truth[k]}),
        rows=len(stored), distinct=len(values))


@dataclass
class KillFinding:
    """One scheduled kill and what it hit."""

    start: int
    t: float
    returncode: int
    status: str  # landed | before_work | missed
    in_flight: list[str]  # pages the start was working on; their outcome was unknown at the kill
    recovered: list[str]  # of those, the pages a later start fetched again

    def to_json(self) -> dict:
        return asdict(self)


def did_work(history: History, start: int) -> bool:
    """The start made a request, or told the harness it was at work (anything past 'ready')."""
    return any(r["start"] == start for r in history.of_type("request")) or any(
        e["start"] == start and e["name"] != "ready" for e in history.of_type("scraper_event"))


def sort_kills(history: History) -> list[KillFinding]:
    requests = history.of_type("request")
    reads_leases = history.first("run_started").get("reports_leases", False)
    findings, held_before = [], set()
    for kill in history.of_type("kill"):
        if kill["returncode"] != -signal.SIGKILL:
            status = "missed"  # the process had already exited by itself
        else:
            status = "landed" if did_work(history, kill["start"]) else "before_work"
        held_now = set(kill.get("held_leases", []))
        if reads_leases:
            in_flight = sorted(held_now - held_before)
        else:
            own = [r["path"] for r in requests if r["start"] == kill["start"]]
            in_flight = own[-1:]
        held_before = held_now
        fetched_later = {r["path"] for r in requests if r["start"] is not None and r["start"] > kill["start"]}
        findings.append(KillFinding(kill["start"], kill["t"], kill["returncode"], status, in_flight,
                                    [p for p in in_flight if p in fetched_later]))
    return findings
