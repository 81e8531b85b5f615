"""The named checks of one run, and `compose`, which runs them in order and merges what they say.

Jepsen's checker.clj is the model: each check is a small function of the evidence (the design's
traits, the run's figures, the history, the final catalog, the sorted records) that answers with a
validity, the figures it judged and a (Finding, message) per broken promise. `compose` runs them in
the fixed order of CHECKS, so a verdict's `problems` read the same from run to run, and turns a
check that raises into unknown, never valid (Jepsen's check-safe).

Adding a promise is one function here, one Finding in findings.py, and one test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from killtest.fixture_site.catalog import Catalog
from killtest.fixture_site.recordings.recorded_site import RecordedSite
from killtest.harness.check.categories import EXAMPLES, RecordSets, fetched_again_after_commit, required_event
from killtest.harness.check.complaint import complaint, quoted
from killtest.harness.check.findings import Finding
from killtest.harness.check.holes import holes
from killtest.harness.check.liveness import liveness
from killtest.harness.check.side_effects import check_side_effects, side_effect_findings
from killtest.harness.check.stale_recording import cut_short, judged_without_the_cut
from killtest.harness.check.verdict import CheckResult, DesignTraits, RunVerdict, Validity, judged
from killtest.harness.check.zombies import (
    fetched_twice_not_by_a_pause,
    paused_workers,
    pauses_landed,
    refetches_by_woken_workers,
    zombie_writers,
)
from killtest.harness.history import History
from killtest.harness.promises import Promise


@dataclass(frozen=True)
class Evidence:
    """Everything a check may read; `catalog` is the site as it was at the end of the run."""

    design: DesignTraits
    verdict: RunVerdict  # the figures, already counted; checks read them and never write them
    history: History
    catalog: Catalog
    records: RecordSets


Check = Callable[[Evidence], CheckResult]


def crash(e: Evidence) -> CheckResult:
    """No start exited by itself with an error."""
    if e.verdict.outcome != "crashed":
        return judged([])
    crashed = required_event(e.history, "crash")
    last_line = complaint(crashed["stderr_tail"] or ["(no output)"])
    return judged([(Finding.CRASHED, f"start {crashed['start'] + 1} exited by itself with status"
                                     f" {crashed['returncode']}: {quoted(last_line)}")],
                  {"returncode": crashed["returncode"]})


def kills_landed(e: Evidence) -> CheckResult:
    """A run must have landed a kill (or a pause of one worker of several past its lease, which lets
    another take its page over) on a start at work, or it proved nothing: unknown. A run with no kill
    planned proved nothing either: a crawl nobody interrupted says nothing about kills."""
    v = e.verdict
    figures = {"kills": v.kills, "kills_before_work": v.kills_before_work, "kills_missed": v.kills_missed}
    pauses = pauses_landed(e.history)
    if pauses:
        figures["pauses_landed"] = pauses
    if v.kills or pauses:
        return CheckResult(Validity.VALID, figures)
    if not v.kills_planned:
        return CheckResult(Validity.UNKNOWN, figures, [(
            Finding.NO_KILL_LANDED, "no kill was planned, so this run proved nothing")])
    return CheckResult(Validity.UNKNOWN, figures, [(
        Finding.NO_KILL_LANDED, f"no kill landed on a start at work ({v.kills_before_work} before work,"
                                f" {v.kills_missed} missed: the start had exited by itself"
                                + (f", {v.kills_not_delivered} not delivered: the crawl had finished before them"
                                   if v.kills_not_delivered else "") + "), so this run proved nothing"
                                + _too_soon(e.history, v))])


def _too_soon(history: History, v: RunVerdict) -> str:
    """When timed kills came before the starts' first request: the start-up they missed, and the option to change."""
    delays = [float(p[1:]) for p in required_event(history, "run_started")["kill_points"]
              if p[:1] == "t" and p[1:].replace(".", "", 1).isdigit()]
    if not v.kills_before_work or not delays:
        return ""
    startup = (f"its first request a median {v.startup_s:g}s after it" if v.startup_s is not None else
               "and no start made a request before its kill")
    return (f"; the kills came {min(delays):g}-{max(delays):g}s after each start, {startup}: give --kill-delay"
            " LOW,HIGH past the start-up")


def records(e: Evidence) -> CheckResult:
    """Every product stored, with the site's value, and nothing else; every row readable. A record missing from
    a crawl that did not finish is not lost (its figure is 0): `liveness` counts it as not stored."""
    v, r = e.verdict, e.records
    found = []
    if v.missing_records:
        gave_up = f" ({v.lost_after_fault} of them after a network fault: the design gave up)" \
            if v.lost_after_fault else ""
        never = (e.history.first("run_finished") or {}).get("store_found") is False
        crashed = e.history.first("crash") if v.outcome == "crashed" else None
        why = f" because the crawler exited with status {crashed['returncode']} before storing them" if crashed else ""
        found.append((Finding.LOST, f"the store was never created, so all {v.missing_records} records are missing"
                                    if never and not v.rows else
                                    f"lost {v.missing_records} of {len(e.catalog.products)} records{why}{gave_up}"
                                    f"{keys_named(r.lost)}"))
    if v.wrong_records:
        stale = f" ({v.stale_records} of them stale: the site changed them, the store kept the old value)" \
            if v.stale_records else ""
        found.append((Finding.WRONG_VALUE, f"{v.wrong_records} records hold a value the site does not show (or did"
                                           f" not, when the crawl last fetched their page){stale}"
                                           f"{keys_named(r.wrong)}"))
    if r.not_on_site:
        found.append((Finding.NOT_ON_SITE, f"{len(r.not_on_site)} records are not on the site"
                                           f"{keys_named(r.not_on_site)}"))
    if r.unreadable:
        found.append((Finding.UNREADABLE, f"{len(r.unreadable)} stored rows could not be read: {r.unreadable[0]}"))
    return judged(found, {"missing_records": v.missing_records, "wrong_records": v.wrong_records,
                          "not_on_site": len(r.not_on_site), "unreadable": len(r.unreadable)})


def keys_named(keys) -> str:
    """`: SKU-0003, SKU-0007 and 4 more`: the keys a finding is about, so a user can look them up in their store."""
    keys = [str(k) for k in keys]
    if not keys:
        return ""
    more = f" and {len(keys) - EXAMPLES} more" if len(keys) > EXAMPLES else ""
    return f": {', '.join(keys[:EXAMPLES])}{more}"


def network(e: Evidence) -> CheckResult:
    """After a 429, the design waited as long as Retry-After asked."""
    v = e.verdict
    if not v.early_after_throttle or v.workers != 1:  # the site cannot tell workers apart
        return judged([])
    message = f"{v.early_after_throttle} requests came sooner than a 429's Retry-After asked"
    return judged([(Finding.IGNORED_RETRY_AFTER, message)], {"early_after_throttle": v.early_after_throttle})


def duplicates(e: Evidence) -> CheckResult:
    """One row per product (a product removed after the final crawl was served its page counts); fewer is a
    lost record, found by `records`."""
    v, products = e.verdict, len(e.catalog.products) + len(e.records.removed_after_served)
    if v.rows <= products:
        return judged([])
    return judged([(Finding.EXTRA_ROWS, f"{v.rows} rows for {products} products (expected exactly one each)")],
                  {"rows": v.rows, "products": products})


def requests(e: Evidence) -> CheckResult:
    """A full crawl, plus at most a page per worker a kill interrupted or a pause stopped and a retry per
    network fault; never a page again once its record is stored. On a recorded site, requests for URLs the
    recording lacks (the replay's 404s) are not counted: a stale recording is `recording`'s unknown."""
    v = e.verdict
    found = []
    paused = paused_workers(e.history)
    allowed = v.minimum_requests + v.kills * v.workers + paused + v.faulted_requests
    unrecorded = [r["path"] for r in e.history.of_type("request") if not e.catalog.recorded(r["path"])] \
        if isinstance(e.catalog, RecordedSite) else []
    counted = v.requests - len(unrecorded)
    if counted > allowed:
        per_kill = f"{v.kills} kills" if v.workers == 1 else f"{v.kills} kills x {v.workers} workers"
        faults = f" + {v.faulted_requests} faults" if v.faulted_requests else ""
        pauses = f" + {paused} paused workers" if paused else ""
        besides = f" (besides {len(unrecorded)} for URLs the recording lacks)" if unrecorded else ""
        found.append((Finding.EXCESS_REQUESTS, f"{counted} requests{besides}, more than {v.minimum_requests} +"
                                               f" {per_kill}{pauses}{faults}"))
    woken = refetches_by_woken_workers(e.history, e.catalog.paths_by_sku()) if paused else set()
    refetched = v.refetched_after_commit - len(woken)
    if refetched:
        # Which pages, so a user can find them in the history (products of the final catalog; drift may hide some).
        paths = [p for p in fetched_again_after_commit(e.history, e.catalog.paths_by_sku()) if p not in woken]
        named = f" ({', '.join(paths[:EXAMPLES])}{' ...' if len(paths) > EXAMPLES else ''})" if paths else ""
        pages, their = ("page", "its") if refetched == 1 else ("pages", "their")
        found.append((Finding.REFETCHED_AFTER_COMMIT, f"{refetched} {pages}{named} fetched again after {their}"
                                                      " record was stored: progress is not committed with the result"))
    # A page fetched again while its holder was paused is the pause's cost, as a kill's is (check/zombies.py).
    twice = len(fetched_twice_not_by_a_pause(e.history)) if paused else v.fetched_twice_by_one_start
    if unrecorded:  # a URL the recording lacks, asked twice, is the stale recording `recording` reports
        twice = len([p for p in fetched_twice_not_by_a_pause(e.history) if p not in unrecorded])
    if twice:
        found.append((Finding.FETCHED_TWICE_BY_ONE_START, f"{twice} pages fetched twice by"
                                                          " one start: a lease ran out while its holder still worked"))
    return judged(found, {"requests": v.requests, "allowed": allowed}
                  | ({"not_counted_unrecorded": len(unrecorded)} if unrecorded else {}))


def drift(e: Evidence) -> CheckResult:
    """A record's last change when, and only when, the site changed it."""
    v = e.verdict
    found = []
    if v.rewritten_unchanged:
        found.append((Finding.REWROTE_UNCHANGED, f"{v.rewritten_unchanged} unchanged records rewritten: their"
                                                 " last_changed moved though the site never changed them"))
    if v.missed_changes:
        found.append((Finding.MISSED_CHANGE, f"{v.missed_changes} records the site changed keep a last_changed from"
                                             " before the change (the last one the crawl was shown)"))
    return judged(found, {"site_changes": v.site_changes})


def leases(e: Evidence) -> CheckResult:
    """A start waits for the claims it holds before it says it is done."""
    left = e.verdict.leases_left_at_exit
    if not left:
        return judged([])
    return judged([(Finding.LEFT_LEASES, f"a start finished with {len(left)} claim(s) still held"
                                         f" ({', '.join(left[:EXAMPLES])}): it exited instead of waiting for them")],
                  {"leases_left_at_exit": len(left)})


def control(e: Evidence) -> CheckResult:
    """The control must show what kills do to a design without the four decisions: duplicates."""
    v, design = e.verdict, e.design
    if not design.control or Promise.NO_DUPLICATES not in design.does_not_promise:
        return judged([])
    if v.kills and v.duplicated_records == 0 and v.outcome == "completed":
        return judged([(Finding.CONTROL_WITHOUT_DUPLICATES,
                        "the naive control kept no duplicate: the kills did not bite")], {"duplicated_records": 0})
    return judged([], {"duplicated_records": v.duplicated_records})


def side_effects(e: Evidence) -> CheckResult:
    """Files, webhooks and the counter, for a design that has them; its figures become the verdict's `side_effects`."""
    if not e.design.side_effects:
        return judged([])
    effects = check_side_effects(e.history, e.catalog, e.records.distinct)
    return judged(side_effect_findings(effects), effects.as_figures())


def recording(e: Evidence) -> CheckResult:
    """On a recorded site, every request was one the recording holds (a replay never forwards one)."""
    if not isinstance(e.catalog, RecordedSite):
        return judged([])
    requests = e.history.of_type("request")
    if not requests and e.records.distinct:  # records without a request: it went around the replay proxy
        return CheckResult(Validity.UNKNOWN, {"unrecorded_requests": 0}, [(
            Finding.UNRECORDED_REQUEST, "no request reached the replay though the store holds records: the design"
                                        " went around the proxy, to the live site")])
    unrecorded = sorted({r["path"][1:] for r in requests if not e.catalog.recorded(r["path"])})
    if not unrecorded:
        return judged([], {"unrecorded_requests": 0})
    return CheckResult(Validity.UNKNOWN, {"unrecorded_requests": len(unrecorded)}, [(
        Finding.UNRECORDED_REQUEST, f"{len(unrecorded)} URLs are not in the recording, so the run did not meet the"
                                    " recorded site; the recording may be stale: re-record (killtest record) if the"
                                    f" site changed. First URLs: {', '.join(unrecorded[:EXAMPLES])}")])


# The order of a verdict's problems; result files, the zoo and explore outputs compare by it.
CHECKS: tuple[tuple[str, Check], ...] = (
    ("liveness", liveness), ("crash", crash), ("kills_landed", kills_landed), ("records", records), ("holes", holes),
    ("network", network), ("duplicates", duplicates), ("requests", requests), ("drift", drift),
    ("leases", leases), ("zombie_writers", zombie_writers), ("control", control), ("side_effects", side_effects),
    ("recording", recording),
)


@dataclass
class Composed:
    """The merged answer of every check, and each check's own, by name in the order they ran."""

    validity: Validity = Validity.VALID
    findings: list[tuple[Finding, str]] = field(default_factory=list)
    results: dict[str, CheckResult] = field(default_factory=dict)


def compose(evidence: Evidence, checks: tuple[tuple[str, Check], ...] | None = None) -> Composed:
    """Run each check in order (CHECKS unless given); one that raises is unknown with its error as the
    message, never valid."""
    composed = Composed()
    for name, check in CHECKS if checks is None else checks:
        try:
            result = check(evidence)
        except Exception as error:  # any error of a check is the harness's, not the design's: unknown
            result = _failed(name, error)
        composed.results[name] = _held_to_its_promises(result, evidence.design)
    try:  # a start died on a page the recording lacks: check/stale_recording.py
        cut = cut_short(evidence.history, evidence.catalog) if "recording" in composed.results else None
        if cut is not None:
            composed.results = judged_without_the_cut(composed.results, cut)
    except Exception as error:  # the harness's error, as a check's: unknown
        composed.results["recording"] = _failed("stale_recording", error)
    composed.findings = [finding for result in composed.results.values() for finding in result.findings]
    composed.validity = Validity.merge(r.validity for r in composed.results.values())
    return composed


def _failed(name: str, error: Exception) -> CheckResult:
    """A check that raised: the harness's error, not the design's, so the run is unknown (Jepsen's check-safe)."""
    said = f"check {name} failed: {type(error).__name__}: {error}"
    return CheckResult(Validity.UNKNOWN, {}, [(Finding.CHECK_FAILED, said)])


def _held_to_its_promises(result: CheckResult, design: DesignTraits) -> CheckResult:
    """The result without the findings of promises the design does not make (its spec waived them).

    A check that found only waived findings judged nothing the design promised: valid. The checks
    themselves know no design's promises; this is the one place they are applied."""
    waived = design.does_not_promise
    kept = [(finding, message) for finding, message in result.findings if finding.promise not in waived]
    if len(kept) == len(result.findings):
        return result
    validity = result.validity if kept or result.validity != Validity.INVALID else Validity.VALID
    return CheckResult(validity, result.figures, kept)
