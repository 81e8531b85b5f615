"""Judge one run from its history and the site's ground truth; plain data out.

The history holds everything: starts, kills, requests, and the records the store held at the end.
Every figure below is derived from the categories in harness.categories, not counted a second way.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field

from fixture_site.catalog import Catalog
from harness.categories import EXAMPLES, KillFinding, RecordSets, sort_kills, sort_records
from harness.designs import Design
from harness.history import History


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
    repeated_requests: int
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
    categories: dict = field(default_factory=dict)
    kill_findings: list[dict] = field(default_factory=list)
    valid: bool = True
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def check_run(design: Design, run: int, history: History, catalog: Catalog) -> RunVerdict:
    """Count rows, records, requests and kills, and list every promise the design broke."""
    started = history.first("run_started")
    finished = history.first("run_finished")
    requests = history.of_type("request")
    records = sort_records(history, catalog.prices_by_sku())
    kills = sort_kills(history)
    landed = [k for k in kills if k.status == "landed"]
    landed_events = [e for e in history.of_type("kill") if e["start"] in {k.start for k in landed}]
    served_per_path = Counter(r["path"] for r in requests)
    waits = [e for e in history.of_type("scraper_event") if e["name"] == "lease_wait"]

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
        requests=len(requests),
        # Every request past the first fetch of a page; for a finished crawl this is requests - 525.
        repeated_requests=len(requests) - len(served_per_path),
        paths_fetched_again=sum(1 for n in served_per_path.values() if n > 1),
        in_flight_at_kills=sum(len(k.in_flight) for k in landed),
        recovered=sum(len(k.recovered) for k in landed),
        duplicate_ratio=round(records.rows / len(catalog.products), 4),
        wall_s=finished["wall_s"], outcome=finished["outcome"],
        startup_s=_median_startup(history), request_rate=_request_rate(history),
        lease_waits=len(waits), lease_wait_s=round(sum(e.get("seconds", 0.0) for e in waits), 3),
        categories=_categories(records, kills), kill_findings=[k.to_json() for k in kills])
    verdict.problems = _broken_promises(design, verdict, history, catalog)
    verdict.valid = not verdict.problems
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
        "recovered": {"count": len(recovered), "examples": recovered[:EXAMPLES]},
        "outcome_unknown_at_kill": {"count": len(unknown), "examples": unknown[:EXAMPLES]},
    }


def _broken_promises(design: Design, v: RunVerdict, history: History, catalog: Catalog) -> list[str]:
    products = len(catalog.products)
    problems = []
    if v.outcome == "timed_out":
        limit = history.first("run_started")["time_limit_s"]
        problems.append(f"liveness: the crawl had not finished after the {limit:g}s time limit")
    elif v.outcome == "crashed":
        crash = history.first("crash")
        last_line = (crash["stderr_tail"] or ["(no output)"])[-1]
        problems.append(f"start {crash['start'] + 1} exited by itself with status {crash['returncode']}: {last_line}")
    if v.kills_planned and v.kills == 0:
        problems.append(f"no kill landed on a start at work ({v.kills_before_work} before work,"
                        f" {v.kills_missed} missed), so this run proved nothing")
    if v.missing_records:
        problems.append(f"lost {v.missing_records} of {products} records")
    if v.wrong_records:
        problems.append(f"{v.wrong_records} records hold a value the site never showed")
    if v.unexpected_records - v.wrong_records:
        problems.append(f"{v.unexpected_records - v.wrong_records} records are not on the site")
    if design.claims_idempotence:
        if v.rows != products:
            problems.append(f"{v.rows} rows for {products} products (expected exactly one each)")
        allowed = catalog.full_crawl_requests + v.kills
        if v.requests > allowed:
            problems.append(f"{v.requests} requests, more than {catalog.full_crawl_requests} + {v.kills} kills")
    elif v.kills and v.duplicated_records == 0 and v.outcome == "completed":
        # The control must show what kills do to a design without the four decisions.
        problems.append("the naive control kept no duplicate: the kills did not bite")
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
            for n in names if not designs[n].claims_idempotence]


def _walls_on_shared_schedules(verdicts, claimant: str, control: str) -> tuple[list[float], list[float]]:
    walls = {(v.design, v.seed): v.wall_s for v in verdicts}
    seeds = sorted({v.seed for v in verdicts if (claimant, v.seed) in walls and (control, v.seed) in walls})
    return [walls[(claimant, s)] for s in seeds], [walls[(control, s)] for s in seeds]
