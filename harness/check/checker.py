"""Judge one run from its history and the site's ground truth; plain data out.

The history holds everything: starts, kills, requests, and the records the store held at the end.
Every figure below is derived from the categories in harness.check.categories, not counted a second way.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field

from fixture_site.catalog import Catalog
from harness.check.categories import (EXAMPLES, KillFinding, RecordSets, claim_stalls, crawls_by_start,
                                 fetched_again_after_commit,
                                 fetched_twice_by_one_start, sort_kills, sort_records)
from harness.design.model import Design
from harness.check.drift import all_paths_by_sku, catalog_versions, minimum_requests, site_change_times
from harness.check.network_faults import early_after_throttle, fault_counts, faulted_paths
from harness.check.health import requests_per_record
from harness.history import History
from harness.check.side_effects import check_side_effects, side_effect_problems


@dataclass
class RunVerdict:
    """The figures of one run and whether the design kept its promises."""

    design: str
    run: int
    seed: int
    kills: int  # kills that landed: SIGKILL reported by the kernel, on a start that had begun work
    kills_planned: int
    kills_not_delivered: int  # the crawl finished before the schedule ran out
    kills_before_work: int  # SIGKILL landed before the start made a request or reported any work
    kills_missed: int  # the process had exited by itself when the signal was sent
    kills_between_lease_and_commit: int
    kills_during_lease_wait: int  # the start was asleep, waiting for another start's lease to run out
    rows: int
    distinct_records: int
    correct_records: int
    wrong_records: int
    missing_records: int
    unexpected_records: int
    duplicated_records: int
    requests: int
    minimum_requests: int  # one full crawl per crawl: 525 for the article's site, twice that with a re-crawl
    repeated_requests: int  # requests past the first fetch of a page within its crawl
    paths_fetched_again: int
    in_flight_at_kills: int  # pages whose outcome was unknown when their start was killed
    recovered: int  # of those, pages a later start fetched again
    duplicate_ratio: float
    wall_s: float
    outcome: str
    startup_s: float | None  # median time from a start to its first request served
    request_rate: float | None  # requests per second while a start was crawling
    lease_waits: int
    lease_wait_s: float
    crawls: int = 1
    workers: int = 1
    unreadable_rows: int = 0
    rewritten_unchanged: int = 0  # records whose last_changed moved though the site never changed them
    refetched_after_commit: int = 0  # pages fetched again in the same crawl after their record was stored
    fetched_twice_by_one_start: int = 0  # pages one start fetched more than once
    leases_left_at_exit: list[str] = field(default_factory=list)  # claims a start left when it said it was done
    # The longest a page claimed by a killed start waited for another start to fetch it (seconds).
    longest_claim_stall_s: float = 0.0
    requests_per_record: float = 0.0  # the article's health metric (harness/check/health.py)
    faults: dict = field(default_factory=dict)  # requests that met each network fault (harness/check/network_faults.py)
    faulted_requests: int = 0
    retries: int = 0  # retries the design reported (its `retry` events)
    lost_after_fault: int = 0  # lost records whose product page had met a fault: the design gave up on them
    early_after_throttle: int = 0  # requests sooner than a 429's Retry-After allowed
    site_changes: int = 0  # times the site's content drifted during the run (harness/check/drift.py)
    missed_changes: int = 0  # records the site changed whose stored last change is older than the site's
    stale_records: int = 0  # of the wrong records, those the site had changed: the store kept an old value
    side_effects: dict = field(default_factory=dict)  # files, webhooks and counter (harness/check/side_effects.py)
    scraper_s: float = 0.0  # of wall_s, the time a scraper start was running; the rest was the harness's
    categories: dict = field(default_factory=dict)
    kill_findings: list[dict] = field(default_factory=list)
    valid: bool = True
    findings: list[str] = field(default_factory=list)  # a code per broken promise, in the order of `problems`
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def check_run(design: Design, run: int, history: History, catalog: Catalog) -> RunVerdict:
    """Count rows, records, requests and kills, and list every promise the design broke."""
    started = history.first("run_started")
    finished = history.first("run_finished")
    requests = history.of_type("request")
    versions = catalog_versions(catalog, history)
    first_catalog, catalog = versions[0], versions[-1]  # the store must match the site at the end
    records = sort_records(history, catalog.truth(), site_change_times(history))
    kills = sort_kills(history)
    landed = [k for k in kills if k.status == "landed"]
    landed_events = [e for e in history.of_type("kill") if e["start"] in {k.start for k in landed}]
    crawl_of = crawls_by_start(history)
    crawls = 1 + started.get("recrawls", 0)
    served_per_crawl_and_path = Counter((crawl_of.get(r["start"], 1), r["path"]) for r in requests)
    waits = [e for e in history.of_type("scraper_event") if e["name"] == "lease_wait"]
    exits = history.of_type("process_exited")

    verdict = RunVerdict(
        design=design.name, run=run, seed=started["seed"],
        kills=len(landed), kills_planned=len(started["kill_points"]),
        kills_not_delivered=len(started["kill_points"]) - len(kills),
        kills_before_work=sum(k.status == "before_work" for k in kills),
        kills_missed=sum(k.status == "missed" for k in kills),
        # For a design whose leases the harness reads, a kill's in-flight pages are the ones it left newly leased.
        kills_between_lease_and_commit=sum(1 for k in landed if k.in_flight) if started.get("reports_leases") else 0,
        kills_during_lease_wait=_kills_during_lease_wait(landed_events, waits),
        rows=records.rows, distinct_records=records.distinct, correct_records=records.correct,
        wrong_records=len(records.wrong), missing_records=len(records.lost),
        unexpected_records=records.unexpected, duplicated_records=len(records.duplicated),
        requests=len(requests), minimum_requests=minimum_requests(first_catalog, history, crawls),
        repeated_requests=len(requests) - len(served_per_crawl_and_path),
        paths_fetched_again=sum(1 for n in served_per_crawl_and_path.values() if n > 1),
        in_flight_at_kills=sum(len(k.in_flight) for k in landed),
        recovered=sum(len(k.recovered) for k in landed),
        duplicate_ratio=round(records.rows / len(catalog.products), 4),
        wall_s=finished["wall_s"], outcome=finished["outcome"], scraper_s=finished.get("scraper_s", 0.0),
        startup_s=_median_startup(history), request_rate=_request_rate(history),
        lease_waits=len(waits), lease_wait_s=round(sum(e.get("seconds", 0.0) for e in waits), 3),
        crawls=crawls, workers=started.get("workers", 1), unreadable_rows=len(records.unreadable),
        rewritten_unchanged=len(records.rewritten_unchanged),
        refetched_after_commit=len(fetched_again_after_commit(history, all_paths_by_sku(versions))),
        fetched_twice_by_one_start=len(fetched_twice_by_one_start(history)),
        leases_left_at_exit=sorted({p for e in exits if e["returncode"] == 0 for p in e.get("held_leases", [])}),
        longest_claim_stall_s=max((seconds for _, seconds in claim_stalls(history).values()), default=0.0),
        categories=_categories(records, kills), kill_findings=[k.to_json() for k in kills],
        requests_per_record=requests_per_record(len(requests), records.distinct, crawls),
        faults=fault_counts(history), faulted_requests=sum(1 for r in requests if r.get("fault")),
        retries=sum(1 for e in history.of_type("scraper_event") if e["name"] == "retry"),
        lost_after_fault=len(set(catalog.paths_by_sku()[sku] for sku in records.lost) & faulted_paths(history)),
        early_after_throttle=early_after_throttle(history),
        site_changes=len(history.of_type("catalog_changed")), missed_changes=len(records.missed_change),
        stale_records=len(records.stale))
    effects = check_side_effects(history, catalog, records.distinct) if design.side_effects else None
    if effects is not None:
        verdict.side_effects = asdict(effects)
    broken = _broken_promises(design, verdict, history, catalog, records)
    broken += side_effect_problems(effects) if effects is not None else []
    verdict.findings = [code for code, _ in broken]
    verdict.problems = [message for _, message in broken]
    verdict.valid = not broken
    return verdict


def _categories(records: RecordSets, kills: list[KillFinding]) -> dict:
    """Counts per category with a few examples of each, for the report and for a person debugging."""
    landed = [k for k in kills if k.status == "landed"]
    unknown = [path for k in landed for path in k.in_flight]
    recovered = [path for k in landed for path in k.recovered]
    return {
        "lost": {"count": len(records.lost), "examples": records.lost[:EXAMPLES]},
        "duplicated": {"count": len(records.duplicated), "extra_rows": sum(n - 1 for n in records.duplicated.values()),
                       "examples": list(records.duplicated)[:EXAMPLES]},
        "unexpected": {"count": records.unexpected, "examples": (records.wrong + records.not_on_site)[:EXAMPLES]},
        "unreadable": {"count": len(records.unreadable), "examples": records.unreadable[:EXAMPLES]},
        "rewritten_unchanged": {"count": len(records.rewritten_unchanged),
                                "examples": records.rewritten_unchanged[:EXAMPLES]},
        "recovered": {"count": len(recovered), "examples": recovered[:EXAMPLES]},
        "outcome_unknown_at_kill": {"count": len(unknown), "examples": unknown[:EXAMPLES]},
    }


# Every finding the checker can report, by code; the zoo and the baseline refer to these codes.
FINDINGS = {
    "liveness": "the crawl did not finish in time",
    "crashed": "a start exited by itself with an error",
    "no_kill_landed": "no kill landed on a start at work",
    "lost": "a product on the site was never stored",
    "wrong_value": "a stored value the site never showed",
    "not_on_site": "a stored record the site does not have",
    "unreadable": "a stored row that could not be read",
    "extra_rows": "more rows than products",
    "excess_requests": "more requests than a full crawl plus one per kill",
    "refetched_after_commit": "a page fetched again after its record was stored",
    "fetched_twice_by_one_start": "a page fetched twice by one start",
    "rewrote_unchanged": "an unchanged record rewritten (its last change moved)",
    "left_leases": "a start finished with claims still held",
    "ignored_retry_after": "a request sooner than a 429's Retry-After asked",
    "missed_change": "a record the site changed whose last_changed did not move",
    "missing_files": "a product's current image not on disk",
    "duplicate_files": "a downloaded file that repeats another's bytes, or a partial download left behind",
    "missing_webhooks": "a current record no webhook announced",
    "duplicate_webhooks": "a record version announced again under a new idempotency key, or none",
    "wrong_counter": "a counter that does not equal the records stored",
    "control_without_duplicates": "the naive control kept no duplicate",
}


def _broken_promises(design: Design, v: RunVerdict, history: History, catalog: Catalog,
                     records: RecordSets) -> list[tuple[str, str]]:
    products = len(catalog.products)
    problems: list[tuple[str, str]] = []
    if v.outcome == "timed_out":
        limit = history.first("run_started")["time_limit_s"]
        held = (history.first("time_limit") or {}).get("held_leases", [])
        claims = (f"; the store still held {len(held)} claim(s) ({', '.join(held[:EXAMPLES])}), one of them"
                  f" unfetched for {v.longest_claim_stall_s:g}s after the kill that left it") if held else ""
        problems.append(("liveness", f"liveness: the crawl had not finished after the {limit:g}s time limit{claims}"))
    elif v.outcome == "crashed":
        crash = history.first("crash")
        last_line = (crash["stderr_tail"] or ["(no output)"])[-1]
        problems.append(("crashed", f"start {crash['start'] + 1} exited by itself with status {crash['returncode']}:"
                                    f" {last_line}"))
    if v.kills_planned and v.kills == 0:
        problems.append(("no_kill_landed", f"no kill landed on a start at work ({v.kills_before_work} before work,"
                                           f" {v.kills_missed} missed), so this run proved nothing"))
    if v.missing_records:
        gave_up = f" ({v.lost_after_fault} of them after a network fault: the design gave up)" \
            if v.lost_after_fault else ""
        problems.append(("lost", f"lost {v.missing_records} of {products} records{gave_up}"))
    if v.wrong_records:
        stale = f" ({v.stale_records} of them stale: the site changed them, the store kept the old value)" \
            if v.stale_records else ""
        problems.append(("wrong_value", f"{v.wrong_records} records hold a value the site does not show{stale}"))
    if records.not_on_site:
        problems.append(("not_on_site", f"{len(records.not_on_site)} records are not on the site"))
    if records.unreadable:
        problems.append(("unreadable", f"{len(records.unreadable)} stored rows could not be read:"
                                       f" {records.unreadable[0]}"))
    if v.early_after_throttle and v.workers == 1:  # the site cannot tell workers apart
        problems.append(("ignored_retry_after", f"{v.early_after_throttle} requests came sooner than a 429's"
                                                " Retry-After asked"))
    if design.claims_idempotence:
        problems += _idempotence_broken(v, catalog)
    elif design.control and v.kills and v.duplicated_records == 0 and v.outcome == "completed":
        # The control must show what kills do to a design without the four decisions.
        problems.append(("control_without_duplicates", "the naive control kept no duplicate: the kills did not bite"))
    return problems


def _idempotence_broken(v: RunVerdict, catalog: Catalog) -> list[tuple[str, str]]:
    """The promises of a design that claims idempotence, beyond keeping every record right."""
    products = len(catalog.products)
    problems = []
    if v.rows > products:  # fewer rows than products is a lost record, reported above
        problems.append(("extra_rows", f"{v.rows} rows for {products} products (expected exactly one each)"))
    # Each worker a kill interrupts may lose the one page it was fetching; each fault costs one retry.
    allowed = v.minimum_requests + v.kills * v.workers + v.faulted_requests
    if v.requests > allowed:
        per_kill = f"{v.kills} kills" if v.workers == 1 else f"{v.kills} kills x {v.workers} workers"
        faults = f" + {v.faulted_requests} faults" if v.faulted_requests else ""
        problems.append(("excess_requests", f"{v.requests} requests, more than {v.minimum_requests} + {per_kill}"
                                            f"{faults}"))
    if v.refetched_after_commit:
        problems.append(("refetched_after_commit", f"{v.refetched_after_commit} pages fetched again after their record"
                                                   " was stored: progress is not committed with the result"))
    if v.fetched_twice_by_one_start:
        problems.append(("fetched_twice_by_one_start", f"{v.fetched_twice_by_one_start} pages fetched twice by one"
                                                       " start: a lease ran out while its holder still worked"))
    if v.rewritten_unchanged:
        problems.append(("rewrote_unchanged", f"{v.rewritten_unchanged} unchanged records rewritten: their"
                                              " last_changed moved though the site never changed them"))
    if v.missed_changes:
        problems.append(("missed_change", f"{v.missed_changes} records the site changed keep a last_changed from"
                                          " before the change"))
    if v.leases_left_at_exit:
        problems.append(("left_leases", f"a start finished with {len(v.leases_left_at_exit)} claim(s) still held"
                                        f" ({', '.join(v.leases_left_at_exit[:EXAMPLES])}): it exited instead of"
                                        " waiting for them"))
    return problems


def _kills_during_lease_wait(kills: list[dict], naps: list[dict]) -> int:
    return sum(1 for k in kills
               if any(n["start"] == k["start"] and n["t"] <= k["t"] <= n["t"] + n.get("seconds", 0) for n in naps))


def _median_startup(history: History) -> float | None:
    started_at = {e["start"]: e["t"] for e in history.of_type("process_started")}
    first_request: dict[int, float] = {}
    for r in history.of_type("request"):
        first_request.setdefault(r["start"], r["t"])
    delays = [first_request[s] - t for s, t in started_at.items() if s in first_request]
    return round(statistics.median(delays), 4) if delays else None


def _request_rate(history: History) -> float | None:
    """Requests per second between the first and the last request of each start, over all starts."""
    times_per_start: dict[int, list[float]] = {}
    for r in history.of_type("request"):
        times_per_start.setdefault(r["start"], []).append(r["t"])
    spans = [(len(ts) - 1, ts[-1] - ts[0]) for ts in times_per_start.values() if len(ts) > 1]
    busy_s = sum(span for _, span in spans)
    return round(sum(n for n, _ in spans) / busy_s, 1) if busy_s > 0 else None


def compare_designs(verdicts: list[RunVerdict], designs: dict[str, Design]) -> list[str]:
    """Over the schedules both ran, an idempotent design's total wall time must beat the naive control's.

    Summed, not run by run: one unlucky run, where kills keep landing on freshly re-claimed pages and
    the final start waits out lease after lease, may take longer than a naive re-crawl.
    """
    problems = []
    for claimant, control in _design_pairs(verdicts, designs):
        ours, theirs = _walls_on_shared_schedules(verdicts, claimant, control)
        if ours and sum(ours) >= sum(theirs):
            problems.append(f"{claimant} took {sum(ours):.2f}s over {len(ours)} schedules,"
                            f" not less than {control}'s {sum(theirs):.2f}s")
    return problems


def per_run_wins(verdicts: list[RunVerdict], designs: dict[str, Design]) -> list[str]:
    """How often each idempotent design beat the control run by run: a figure for the report, not a check."""
    lines = []
    for claimant, control in _design_pairs(verdicts, designs):
        ours, theirs = _walls_on_shared_schedules(verdicts, claimant, control)
        wins = sum(a < b for a, b in zip(ours, theirs))
        lines.append(f"{claimant} finished before {control} in {wins} of {len(ours)} runs on the same schedule"
                     f" ({sum(ours):.2f}s against {sum(theirs):.2f}s in all)")
    return lines


def _design_pairs(verdicts: list[RunVerdict], designs: dict[str, Design]) -> list[tuple[str, str]]:
    names = list(dict.fromkeys(v.design for v in verdicts))
    return [(c, n) for c in names if designs[c].claims_idempotence
            for n in names if designs[n].control]


def _walls_on_shared_schedules(verdicts, claimant: str, control: str) -> tuple[list[float], list[float]]:
    walls = {(v.design, v.seed): v.wall_s for v in verdicts}
    seeds = sorted({v.seed for v in verdicts if (claimant, v.seed) in walls and (control, v.seed) in walls})
    return [walls[(claimant, s)] for s in seeds], [walls[(control, s)] for s in seeds]
