"""Where a run's kills landed: the crash state each killed start was in, and what a run could not have found.

A PASS is a claim about the crash states a crawler was killed in, and a kill's time does not say which
state that was. A framework that flushes its items once a second, killed 0.2-1 s after each start's first
request, is killed ten times before its first store write: the run "landed" ten kills and tested one
state, in which nothing stored can be lost or duplicated. So every kill event carries what the store held
just after it (harness/running/kill_state.py), and this module reads, per killed start:

- its requests (the pages it asked for: the work it did);
- whether it wrote to its store (the store's files changed since the kill before, or its rows did);
- the rows it added (its rows after the kill less the rows after the kill before);
- where in the whole crawl it died: the share of the shop's product pages the run had fetched by then,
  early (under a third), middle, or late (two thirds and more);

and each start's phase, one of PHASES. `coverage_gap` says, in one sentence, what a run none of whose killed
starts had stored a record could not have found, and what to set; the report prints it beside the verdict, PASS
or not (it is not a finding: the design broke no promise, the run tested less than it seems).

Pure functions of the history, as every check is.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from killtest.harness.history import History

# A killed start's phase, earliest first.
NO_REQUEST = "no request"  # killed before its first request (or while it waited on what a killed start held)
NO_STORE_WRITE = "fetched, no store write"  # it fetched pages and had not written to its store yet
WROTE_NO_RECORD = "wrote, no record"  # its store changed (a claim, a lease, a torn line) but no row came of it
STORED = "stored records"  # it had added rows to the store
PHASES = (NO_REQUEST, NO_STORE_WRITE, WROTE_NO_RECORD, STORED)
# Where in the crawl, by the share of the shop's product pages fetched by the run's starts up to the kill.
STAGES = ("early", "middle", "late")


@dataclass(frozen=True)
class KilledStart:
    """One start a kill ended, and the crash state it was in."""

    start: int  # 1-based, as the report numbers starts
    point: str
    alive_s: float  # from its spawn to the kill
    requests: int
    wrote: bool | None  # None: the store could not be read after the kill, and its files did not say
    rows_added: int | None  # None: the store could not be read after this kill or the one before
    crawl_share: float  # of the shop's product pages, the share the run had fetched by the kill
    phase: str
    stage: str

    def to_json(self) -> dict:
        return asdict(self)


def killed_starts(history: History, products: set[str]) -> list[KilledStart]:
    """Every start ended by a kill of the whole start (not a pause, not one worker of several), in order;
    `products` are the paths of the shop's product pages (every version's, when it drifted)."""
    started = {e["start"]: e for e in history.of_type("process_started")}
    requests = sorted(history.of_type("request"), key=lambda r: r["t"])
    before: dict = {"store_rows": 0, "store_bytes": 0, "store_mtime_ns": None}  # no store before the first start
    found = []
    for kill in sorted(history.of_type("kill"), key=lambda k: k["t"]):
        if "store_rows" not in kill or kill.get("worker") is not None:
            continue  # the start went on (one worker hit), or a history from before kills carried the store's state
        own = [r for r in requests if r.get("start") == kill["start"]]
        fetched = {r["path"] for r in requests if r["t"] <= kill["t"] and r["path"] in products}
        rows = _added(kill.get("store_rows"), before.get("store_rows"))
        wrote = _wrote(kill, before, rows)
        share = round(len(fetched) / len(products), 3) if products else 0.0
        spawn = started.get(kill["start"], {}).get("t", kill["t"])
        found.append(KilledStart(kill["start"] + 1, kill.get("point", ""), round(kill["t"] - spawn, 3), len(own),
                                 wrote, rows, share, _phase(len(own), wrote, rows), _stage(share)))
        before = kill
    return found


def phase_counts(starts: list[KilledStart]) -> dict[str, int]:
    """Killed starts per phase and per stage, every phase and stage named (zero where none)."""
    counts = {phase: sum(s.phase == phase for s in starts) for phase in PHASES}
    counts.update({stage: sum(s.stage == stage for s in starts) for stage in STAGES})
    return counts


def storing_line(starts: list[KilledStart]) -> str:
    """`killed starts that had stored records: 3 of 10`: the line every output prints."""
    return f"killed starts that had stored records: {sum(s.phase == STORED for s in starts)} of {len(starts)}"


def coverage_gap(starts: list[KilledStart]) -> str:
    """What a run (or a campaign's runs) whose every killed start at work died before storing a record could not
    have found, and what to set; "" when some had stored records, or no kill landed at work.

    The other one-phase case, every killed start past its first stored record, is no gap: a start killed while it
    stores record after record dies with fetched pages not yet stored, the state "before the first write" is."""
    at_work = [s for s in starts if s.phase != NO_REQUEST]
    if not at_work:
        return ""  # no kill at work: the run proved nothing, which kills_landed says
    stored = [s for s in at_work if s.phase == STORED]
    if not stored:
        wrote = [s for s in at_work if s.wrote]
        longest = max(s.alive_s for s in at_work)
        what = (f"{len(wrote)} of {len(at_work)} killed starts at work had written to their store, none had stored"
                " a record" if wrote else f"none of {len(at_work)} killed starts at work had written to its store")
        return (f"{what} (the longest lived {longest:g}s): these kills could not have found a"
                " record lost or duplicated by a crash after its write and before the crawler's next durable step;"
                " kill later in a start's work (a later point; for timed kills a --kill-delay fLOW,HIGH:WAIT whose"
                " HIGH is past the first store write) or explore every store write before and after (killtest"
                " explore)")
    return ""


def _added(after: int | None, before: int | None) -> int | None:
    return None if after is None or before is None else after - before


def _wrote(kill: dict, before: dict, rows: int | None) -> bool | None:
    """Whether the start changed its store: its files (size or last change), else its rows for a server's store."""
    if kill.get("store_bytes") is not None:
        return (kill["store_bytes"], kill.get("store_mtime_ns")) != (before.get("store_bytes") or 0,
                                                                     before.get("store_mtime_ns"))
    return None if rows is None else rows != 0


def _phase(requests: int, wrote: bool | None, rows: int | None) -> str:
    if not requests:
        return NO_REQUEST
    if rows:
        return STORED
    return WROTE_NO_RECORD if wrote else NO_STORE_WRITE


def _stage(share: float) -> str:
    return STAGES[0] if share < 1 / 3 else STAGES[1] if share < 2 / 3 else STAGES[2]
