"""The bug zoo's runs: each zoo design and the reference design on the zoo design's scenario, both checked.

A verdict is right when killtest reports the expected finding on the zoo design and nothing on the
reference (the correct design), so a finding is the mistake's doing, not the scenario's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from killtest.fixture_site.catalog import build_catalog, parse_drift
from killtest.harness.defaults import ZOO_DRIFT_SEED, ZOO_LISTING_PAGES, ZOO_PER_PAGE, ZOO_REFERENCE_DESIGN
from killtest.harness.design.registry import design_named
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.faults.zoo_scenarios import ZooEntry
from killtest.harness.running.orchestrator import check_phase, run_phase, stage
from killtest.harness.running.runner import RunSettings


@dataclass
class ZooOutcome:
    design: str
    mistake: str
    expect: str
    scenario: str
    findings: list[str] = field(default_factory=list)  # what the checker reported on the zoo design
    problems: list[str] = field(default_factory=list)
    control_findings: list[str] = field(default_factory=list)  # what it reported on the correct design
    replay: str = ""
    reference: str = ""  # the correct design it ran beside, when not the idempotent one (a fixed twin)
    control_problems: list[str] = field(default_factory=list)  # the correct design's findings, one line each

    @property
    def flagged(self) -> bool:
        return self.expect in self.findings

    @property
    def control_clean(self) -> bool:
        return not self.control_findings

    @property
    def as_expected(self) -> bool:
        return self.flagged and self.control_clean

    def to_json(self) -> dict:
        return {**asdict(self), "flagged": self.flagged, "control_clean": self.control_clean,
                "as_expected": self.as_expected}


def run_zoo(entries: list[ZooEntry], work_dir: str | None = None,
            on_progress: Callable[[str], None] = lambda message: None) -> list[ZooOutcome]:
    """Run each zoo design and the correct design on the zoo design's scenario; check both."""
    catalog = build_catalog(ZOO_LISTING_PAGES, ZOO_PER_PAGE)
    outcomes = []
    for number, entry in enumerate(entries, start=1):
        scenario = entry.scenario
        control = design_named(entry.reference)
        settings = RunSettings(lease_s=scenario.lease_s, time_limit_s=scenario.time_limit_s,
                               recrawls=scenario.recrawls, workers=scenario.workers, aim_pauses=scenario.aim_pauses,
                               drift=parse_drift(scenario.drift, ZOO_DRIFT_SEED) if scenario.drift else None)
        verdicts = {}
        with stage(catalog, [entry.design, control], slow_pages=scenario.slow_pages) as on:
            for design, schedule in ((entry.design, scenario.schedule), (control, scenario.control_schedule)):
                on_progress(f"[zoo {number}/{len(entries)}] {design.name} on {entry.design.name}'s scenario")
                # No pre-fork: a zoo scenario runs each start as a new interpreter, as its replay line does.
                history = run_phase(on, design, parse_schedule(schedule), settings, work_dir=work_dir,
                                    prefix="killtest-zoo-")
                verdicts[design.name] = check_phase(design, 1, history, on.site.catalog)
        found = verdicts[entry.design.name]
        outcomes.append(ZooOutcome(entry.design.name, entry.mistake, entry.expect, scenario.describe(),
                                   found.findings, found.problems, verdicts[control.name].findings,
                                   scenario.replay_command(entry.design.name),
                                   "" if entry.reference == ZOO_REFERENCE_DESIGN else entry.reference,
                                   verdicts[control.name].problems))
    return outcomes
