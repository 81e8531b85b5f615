"""What a check says: valid, invalid or unknown, and the verdict of one run that the checks fill in.

Jepsen's checker.clj is the model: a check answers with a validity, the figures it looked at and
what it found; validities merge with invalid beating unknown beating valid (`merge-valid`). Unknown
is not a pass: a run where no kill landed proved nothing, and a check that crashed judged nothing.

`RunVerdict` is plain data, written whole into the result files: `valid` stays beside `validity`
(True only when validity is "valid") so saved campaigns and baselines stay readable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Protocol

from killtest.harness.check.findings import Finding
from killtest.harness.promises import Promise


class Validity(Enum):
    VALID = "valid"
    INVALID = "invalid"
    UNKNOWN = "unknown"  # the run proved nothing, or a check could not judge it

    @staticmethod
    def merge(validities: Iterable[Validity]) -> Validity:
        """Invalid beats unknown beats valid; nothing to merge is valid (Jepsen's merge-valid)."""
        return max(validities, key=_RANK.__getitem__, default=Validity.VALID)


_RANK = {Validity.VALID: 0, Validity.UNKNOWN: 1, Validity.INVALID: 2}


class DesignTraits(Protocol):
    """What the checks need to know of a design (design.model.Design has it); check/ never imports design/."""

    @property
    def name(self) -> str: ...

    @property
    def claims_idempotence(self) -> bool: ...

    @property
    def does_not_promise(self) -> frozenset[Promise]: ...  # the promises its spec waived (killtest.harness.promises)

    @property
    def control(self) -> bool: ...

    @property
    def side_effects(self) -> bool: ...


@dataclass
class CheckResult:
    """What one named check found: its validity, the figures it judged, and a message per finding."""

    validity: Validity = Validity.VALID
    figures: dict = field(default_factory=dict)
    findings: list[tuple[Finding, str]] = field(default_factory=list)


def judged(findings: list[tuple[Finding, str]], figures: dict | None = None) -> CheckResult:
    """The result of a check whose every finding is a broken promise: invalid if it found any."""
    return CheckResult(Validity.INVALID if findings else Validity.VALID, figures or {}, findings)


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
    missing_records: int  # lost: on the site, not in the store, after a crawl that finished or crashed (0: timed out)
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
    # Of the kills that landed, those on a start past its measured start-up that had made no request: waiting.
    kills_while_waiting: int = 0
    leases_left_at_exit: list[str] = field(default_factory=list)  # claims a start left when it said it was done
    # The longest a page claimed by a killed start waited for another start to fetch it (seconds).
    longest_claim_stall_s: float = 0.0
    requests_per_record: float | None = 0.0  # the article's health metric; None: no record stored (health.py)
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
    # On the site, not in the store, when a time limit or a no-progress stop ended the crawl: not stored because
    # the crawl did not finish (`liveness` says so), never counted as lost.
    not_stored_unfinished: int = 0
    # When the crawl did not finish, every start's pace and last words; else the starts that waited long without a
    # request (check/liveness.py StartPace): what the report quotes.
    stalled_starts: list[dict] = field(default_factory=list)
    categories: dict = field(default_factory=dict)
    kill_findings: list[dict] = field(default_factory=list)
    # Every start a kill ended, with the crash state it was in (check/kill_phases.py): its requests, whether it
    # had written to its store, the rows it had added, its phase, and how far into the crawl it died.
    killed_starts: list[dict] = field(default_factory=list)
    # What this run's kills could not have found, when every killed start reached one phase ("" otherwise).
    coverage_gap: str = ""
    # Where its timed kills landed, as exact points (`r3+,r7`: check/landed_points.py), what a replay needs to kill
    # there again; "" when its schedule was exact already, or a kill no exact point stands for.
    landed_schedule: str = ""
    validity: str = Validity.VALID.value  # valid | invalid | unknown (the merge of every named check)
    valid: bool = True  # validity == "valid": what campaigns, baselines and older result files read
    findings: list[str] = field(default_factory=list)  # a code per broken promise, in the order of `problems`
    problems: list[str] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)  # named check -> its validity, in the order they ran

    @property
    def proved_nothing(self) -> bool:
        """Unknown only because no kill landed: the run neither kept nor broke a promise. Any other
        unknown (a check that could not judge) is not excused: explore and scale count it as broken."""
        return self.validity == Validity.UNKNOWN.value and set(self.findings) == {"no_kill_landed"}

    def to_json(self) -> dict:
        return asdict(self)
