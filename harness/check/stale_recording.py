"""A crawl cut short by a stale recording: a start died right after the replay answered 404 for a page it lacks.

The replay never forwards. A page the live site grew after it was recorded is a 404 there, and a scraper
that stops on a 404 dies where the live site would have served the page; a crash ends a run, so every
record the crawl had not reached is missing too. That death and those missing records are the
recording's doing: what such a run says of the promises to finish and to lose nothing proves nothing
(unknown: record the site again). What it found of every other promise (a duplicate, a wrong value, a
zombie write, excess requests) stands: those broke whatever the recording held.

Only a death right after the 404 is the recording's: the dead process's last request was the missing
page, and its last words name the 404 ("404" or "not found"). A start that met a missing page, carried on
and died later of something else crashed by itself (`crashed`, as on the live site). With several workers
a start's requests are told apart by pid; where the site could not tell whose a request was, nothing is cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from killtest.fixture_site.catalog import Catalog
from killtest.fixture_site.recordings.recorded_site import RecordedSite
from killtest.harness.check.complaint import complaint
from killtest.harness.check.findings import Finding
from killtest.harness.check.verdict import CheckResult, Validity
from killtest.harness.history import History
from killtest.harness.promises import Promise

# What a crawl cut short cannot be judged on.
_NAMES_A_404 = re.compile(r"\b404\b|not found", re.IGNORECASE)
NOT_JUDGED = frozenset({Promise.FINISHES, Promise.NO_LOST_RECORDS})


@dataclass(frozen=True)
class CutShort:
    """The start that died (1-based, as reports count), its exit status and last line, and the missing URL."""

    start: int
    returncode: int
    last_line: str
    url: str

    def message(self, not_judged: list[Finding]) -> str:
        codes = ", ".join(dict.fromkeys(f.value for f in not_judged)) or "nothing"
        return (f"start {self.start} died (exit status {self.returncode}: {self.last_line}) right after the replay"
                f" answered 404 for {self.url}, a page the recording lacks: the live site would have served it, so"
                f" the crawl was cut short by the recording, not by the design; not judged: {codes}")


def cut_short(history: History, catalog: Catalog) -> CutShort | None:
    """The crash the recording caused: its start's last request was one the recording does not hold."""
    if not isinstance(catalog, RecordedSite):
        return None
    crash = history.first("crash")
    if crash is None:
        return None
    asked = [r for r in history.of_type("request") if r.get("start") == crash["start"]]
    if crash.get("workers", 1) > 1:  # the dead worker's own requests, or none when they cannot be told apart
        asked = [r for r in asked if crash.get("pid") is not None and r.get("pid") == crash["pid"]]
    said = crash.get("stderr_tail") or []
    if not asked or catalog.recorded(asked[-1]["path"]) or not any(_NAMES_A_404.search(line) for line in said):
        return None
    return CutShort(crash["start"] + 1, crash["returncode"], complaint(said or ["(no output)"]),
                    asked[-1]["path"][1:])


def judged_without_the_cut(results: dict[str, CheckResult], cut: CutShort,
                           recording_check: str = "recording") -> dict[str, CheckResult]:
    """Every check's result without what the cut decides (crashed, lost, liveness, holes: unknown instead),
    the recording check's one finding saying why, then what it said of the recording."""
    dropped = [finding for result in results.values() for finding, _ in result.findings
               if finding.promise in NOT_JUDGED]
    kept = {}
    for name, result in results.items():
        findings = [(finding, said) for finding, said in result.findings if finding.promise not in NOT_JUDGED]
        validity = result.validity
        if len(findings) < len(result.findings) and validity == Validity.INVALID and \
                not any(f.promise != Promise.PROVES_SOMETHING for f, _ in findings):
            validity = Validity.UNKNOWN if findings else Validity.VALID
        kept[name] = CheckResult(validity, result.figures, findings)
    said = kept[recording_check]
    why = ". ".join([cut.message(dropped), *(message for _, message in said.findings)])
    kept[recording_check] = CheckResult(Validity.UNKNOWN, {**said.figures, "cut_short_at": cut.url},
                                        [(Finding.UNRECORDED_REQUEST, why)])
    return kept
