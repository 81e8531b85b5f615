"""Judge one run from its history, the design's store and the site's ground truth; plain data out."""

from __future__ import annotations

import signal
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field

from fixture_site.catalog import Catalog
from harness.designs import Design
from harness.history import History


@dataclass
class RunVerdict:
    """The figures of one run and whether the design kept its promises."""

    design: str
    run: int
    seed: int
    kills: int  # kills that landed: SIGKILL delivered and reported by the kernel as the exit status
    kills_planned: int
    kills_not_delivered: int  # the crawl finished before the schedule ran out
    kills_before_first_request: int
    kills_between_lease_and_commit: int
    kills_during_lease_wait: int  # the start was asleep, waiting for another start's lease to run out
    rows: int
    distinct_records: int
    correct_records: int
    wrong_records: int
    missing_records: int
    unexpected_records: int
    requests: int
    repeated_requests: int
    paths_fetched_again: int
    duplicate_ratio: float
    wall_s: float
    outcome: str
    startup_s: float | None  # median time from a start to its first request served
    request_rate: float | None  # requests per second while a start was crawling
    lease_waits: int
    lease_wait_s: float
    valid: bool = True
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def check_run(design: Design, run: int, history: History, records: list[tuple[str, str]],
              catalog: Catalog) -> RunVerdict:
    """Count rows, records and requests, and list every promise the design broke."""
    started = history.first("run_started")
    finished = history.first("run_finished")
    requests = history.of_type("request")
    kills = history.of_type("kill")
    landed = [k for k in kills if k["returncode"] == -signal.SIGKILL]
    requests_per_start = Counter(r["start"] for r in requests)

    truth = catalog.prices_by_sku()
    stored_values: dict[str, set[str]] = {}
    for key, value in records:
        stored_values.setdefault(key, set()).add(value)
    correct = sum(1 for key, values in stored_values.items() if key in truth and values == {truth[key]})
    wrong = sum(1 for key, values in stored_values.items() if key in truth and values != {truth[key]})
    served_per_path = Counter(r["path"] for r in requests)

    verdict = RunVerdict(
        design=design.name, run=run, seed=started["seed"],
        kills=len(landed), kills_planned=len(started["kill_delays_s"]),
        kills_not_delivered=len(started["kill_delays_s"]) - len(kills),
        kills_before_first_request=sum(1 for k in landed if requests_per_start[k["start"]] == 0),
        kills_between_lease_and_commit=_kills_holding_a_new_lease(landed),
        kills_during_lease_wait=_kills_during_lease_wait(landed, history),
        rows=len(records), distinct_records=len(stored_values), correct_records=correct, wrong_records=wrong,
        missing_records=len(set(truth) - set(stored_values)),
        unexpected_records=len(set(stored_values) - set(truth)),
        requests=len(requests),
        # Every request past the first fetch of a page; for a finished crawl this is requests - 525.
        repeated_requests=len(requests) - len(served_per_path),
        paths_fetched_again=sum(1 for n in served_per_path.values() if n > 1),
        duplicate_ratio=round(len(records) / len(catalog.products), 4),
        wall_s=finished["wall_s"], outcome=finished["outcome"],
        startup_s=_median_startup(history), request_rate=_request_rate(history),
        lease_waits=0, lease_wait_s=0.0)
    waits = [e for e in history.of_type("scraper_event") if e["name"] == "lease_wait"]
    verdict.lease_waits = len(waits)
    verdict.lease_wait_s = round(sum(e.get("seconds", 0.0) for e in waits), 3)
    verdict.problems = _broken_promises(design, verdict, history, catalog)
    verdict.valid = not verdict.problems
    return verdict


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
        problems.append("no kill landed, so this run proved nothing")
    if v.missing_records:
        problems.append(f"lost {v.missing_records} of {products} records")
    if v.wrong_records:
        problems.append(f"{v.wrong_records} records hold a value the site never showed")
    if v.unexpected_records:
        problems.append(f"{v.unexpected_records} records are not on the site")
    if design.claims_idempotence:
        if v.rows != products:
            problems.append(f"{v.rows} rows for {products} products (expected exactly one each)")
        allowed = catalog.full_crawl_requests + v.kills
        if v.requests > allowed:
            problems.append(f"{v.requests} requests, more than {catalog.full_crawl_requests} + {v.kills} kills")
    elif v.kills > v.kills_before_first_request and v.rows <= products and v.outcome == "completed":
        # The control must show what kills do to a design without the four decisions.
        problems.append("the naive control kept no duplicate: the kills did not bite")
    return problems


def _kills_holding_a_new_lease(kills: list[dict]) -> int:
    """Kills that caught a start between claiming a URL and committing it: it left a lease not there before."""
    count, held_before = 0, set()
    for kill in kills:
        held_now = set(kill.get("held_leases", []))
        if held_now - held_before:
            count += 1
        held_before = held_now
    return count


def _kills_during_lease_wait(kills: list[dict], history: History) -> int:
    naps = [e for e in history.of_type("scraper_event") if e["name"] == "lease_wait"]
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
    """Cross-design promises: on the same schedule an idempotent design finishes before the naive control."""
    problems = []
    by_seed: dict[int, list[RunVerdict]] = {}
    for v in verdicts:
        by_seed.setdefault(v.seed, []).append(v)
    for seed, same_schedule in sorted(by_seed.items()):
        controls = [v for v in same_schedule if not designs[v.design].claims_idempotence]
        for claimant in (v for v in same_schedule if designs[v.design].claims_idempotence):
            for control in controls:
                if claimant.wall_s >= control.wall_s:
                    problems.append(f"run {claimant.run} (seed {seed}): {claimant.design} took {claimant.wall_s:.2f}s,"
                                    f" not less than {control.design}'s {control.wall_s:.2f}s")
    return problems
