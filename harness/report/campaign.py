"""A campaign: the verdicts of every run so far, and the figures summarised from them."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from killtest.harness.check.baseline import FigureDiff, regressions
from killtest.harness.check.verdict import RunVerdict
from killtest.harness.published import PUBLISHED_NAIVE_ROWS_PER_PRODUCT, PUBLISHED_WALL_S
from killtest.harness.report.crash_states import caveat, design_phases

# Which columns of the article's table belong to which shipped design.
PUBLISHED_COLUMNS = {"naive": ("naive_rows", "naive_requests"),
                     "idempotent": ("idempotent_rows", "idempotent_requests")}
# naive-page-commit is the article's naive scraper read as one commit per listing page (its spec): the
# article's naive columns are as much its as naive's, so the report puts them beside either.
PUBLISHED_AS = {"naive-page-commit": "naive"}
PUBLISHED_COLUMNS.update({ours: PUBLISHED_COLUMNS[theirs] for ours, theirs in PUBLISHED_AS.items()})


@dataclass
class Campaign:
    """Everything one `killtest run` produced so far; `complete` is False until the last run is checked."""

    command: str
    settings: dict
    verdicts: list[RunVerdict] = field(default_factory=list)
    comparison_problems: list[str] = field(default_factory=list)
    comparison_figures: list[str] = field(default_factory=list)
    baseline_diffs: list[FigureDiff] = field(default_factory=list)
    complete: bool = False
    interrupted: bool = False  # Ctrl+C or SIGTERM stopped it
    stopped_by: str = ""  # what ended an incomplete campaign: "interrupted", or the error, in one line
    health_warnings: list[str] = field(default_factory=list)  # runs above the health threshold (not failures)
    timing: dict = field(default_factory=dict)  # seconds per phase (harness/running/phase_clock.py)
    # The designs whose spec says `control = true`: each is placed against the article's naive band.
    controls: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[str]:
        return regressions(self.baseline_diffs)

    @property
    def valid(self) -> bool:
        """Every planned run ran and kept its promises: an interrupted or failed campaign is never valid."""
        return self.complete and all(v.valid for v in self.verdicts) and not self.comparison_problems \
            and not self.regressions

    @property
    def failed_runs(self) -> int:
        """Runs that broke a promise, or that a check could not judge (any unknown but "no kill landed")."""
        return sum(1 for v in self.verdicts if not v.valid and not v.proved_nothing)

    @property
    def proved_nothing_runs(self) -> int:
        """Runs no kill landed on: they neither kept nor broke a promise, and fail the campaign."""
        return sum(1 for v in self.verdicts if v.proved_nothing)

    def designs(self) -> list[str]:
        return list(dict.fromkeys(v.design for v in self.verdicts))

    def of_design(self, design: str) -> list[RunVerdict]:
        return [v for v in self.verdicts if v.design == design]


def failure_reasons(campaign: Campaign) -> list[str]:
    """Why the campaign is not valid, each reason in words (empty when it passed): a FAIL says what failed."""
    reasons = []
    if not campaign.complete:
        reasons.append(f"incomplete ({campaign.stopped_by or 'stopped before it could say why'})")
    if campaign.failed_runs:
        reasons.append(f"{_runs(campaign.failed_runs)} failed")
    if campaign.proved_nothing_runs:
        reasons.append(f"{_runs(campaign.proved_nothing_runs)} proved nothing (no kill landed on a start at work)")
    if campaign.comparison_problems:
        reasons.append(f"{len(campaign.comparison_problems)} comparison"
                       f" check{'s' if len(campaign.comparison_problems) != 1 else ''} failed")
    if campaign.regressions:
        reasons.append(f"{len(campaign.regressions)} regression{'s' if len(campaign.regressions) != 1 else ''}"
                       " against the baseline")
    return reasons


def verdict_words(campaign: Campaign) -> str:
    """`PASS`, or `FAIL: ` and what failed; a PASS says when some design's kills reached one crash state only."""
    if campaign.valid:
        return "PASS" + caveat(campaign.verdicts)
    return "FAIL: " + "; ".join(failure_reasons(campaign) or ["no run was checked"])


def _runs(n: int) -> str:
    return f"{n} run{'s' if n != 1 else ''}"


def summarise(campaign: Campaign) -> dict:
    """Per-design ranges and medians, and where the naive control falls against the published band."""
    summary: dict[str, dict[str, Any]] = {}
    for design in campaign.designs():
        runs = campaign.of_design(design)
        startups = [v.startup_s for v in runs if v.startup_s is not None]
        rates = [v.request_rate for v in runs if v.request_rate is not None]
        summary[design] = {
            "runs": len(runs),
            "rows_per_product": [min(v.duplicate_ratio for v in runs), max(v.duplicate_ratio for v in runs)],
            "requests": [min(v.requests for v in runs), max(v.requests for v in runs)],
            "wall_s": [min(v.wall_s for v in runs), max(v.wall_s for v in runs)],
            "published_wall_s": _published_wall_s(design),
            "median_startup_s": round(statistics.median(startups), 4) if startups else None,
            "median_request_rate": round(statistics.median(rates), 1) if rates else None,
            "kills": sum(v.kills for v in runs),
            "kills_planned": sum(v.kills_planned for v in runs),
            "kills_not_delivered": sum(v.kills_not_delivered for v in runs),
            "kills_before_work": sum(v.kills_before_work for v in runs),
            "kills_missed": sum(v.kills_missed for v in runs),
            "in_flight_at_kills": sum(v.in_flight_at_kills for v in runs),
            "recovered": sum(v.recovered for v in runs),
            "lost": sum(v.missing_records for v in runs),  # from crawls that finished only
            "not_stored_unfinished": sum(v.not_stored_unfinished for v in runs),
            "duplicated": sum(v.duplicated_records for v in runs),
            "unexpected": sum(v.unexpected_records for v in runs),
            "kills_between_lease_and_commit": sum(v.kills_between_lease_and_commit for v in runs),
            "kills_during_lease_wait": sum(v.kills_during_lease_wait for v in runs),
            "lease_wait_s": round(sum(v.lease_wait_s for v in runs), 3),
            "valid_runs": sum(v.valid for v in runs),
            "crash_states": design_phases(runs),  # where the kills landed (report/crash_states.py)
        }
    for control in campaign.controls:  # found by design.control, whatever the control is called
        if control in summary:
            summary[control]["band_gap"] = naive_band_gap(summary[control]["rows_per_product"])
    return summary


def _published_wall_s(design: str) -> list[float] | None:
    published = PUBLISHED_WALL_S.get(PUBLISHED_AS.get(design, design))
    return list(published) if published else None


def naive_band_gap(ours: list[float]) -> dict:
    """How far our naive rows-per-product range lies from the article's 2.6-4.3, in rows per product."""
    low, high = PUBLISHED_NAIVE_ROWS_PER_PRODUCT
    below = round(max(0.0, low - ours[0]), 2)
    above = round(max(0.0, ours[1] - high), 2)
    inside = ours[0] >= low and ours[1] <= high
    overlaps = ours[1] >= low and ours[0] <= high
    return {"published": [low, high], "ours": ours, "inside": inside, "overlaps": overlaps,
            "lowest_below_band_by": below, "highest_above_band_by": above}


def to_json(campaign: Campaign) -> dict:
    return {"command": campaign.command, "settings": campaign.settings, "complete": campaign.complete,
            "interrupted": campaign.interrupted, "stopped_by": campaign.stopped_by, "valid": campaign.valid,
            "failed_because": failure_reasons(campaign),
            "runs": [v.to_json() for v in campaign.verdicts],
            "comparison_problems": campaign.comparison_problems,
            "comparison_figures": campaign.comparison_figures,
            "baseline": [d.to_json() for d in campaign.baseline_diffs], "regressions": campaign.regressions,
            "summary": summarise(campaign) if campaign.verdicts else {}, "timing": campaign.timing,
            "health_warnings": campaign.health_warnings}
