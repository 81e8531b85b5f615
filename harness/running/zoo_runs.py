"""The bug zoo's runs: each zoo design and the reference design on the zoo design's scenario, both checked.

A verdict is right when killtest reports the expected finding on the zoo design and nothing on the
reference (the correct design), so a finding is the mistake's doing, not the scenario's.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass, field
from typing import Callable

from fixture_site.catalog import build_catalog, parse_drift
from fixture_site.server import SiteServer
from harness.check.checker import check_run
from harness.design.registry import BUILT_IN_DESIGNS
from harness.faults.zoo_scenarios import REFERENCE, ZOO_DRIFT_SEED, ZOO_LISTING_PAGES, ZOO_PER_PAGE, ZooEntry
from harness.faults.schedule import parse_schedule
from harness.running.runner import RunSettings, run_kill_test
from harness.servers.for_stores import StoreServers


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
    control = BUILT_IN_DESIGNS[REFERENCE]
    outcomes = []
    for number, entry in enumerate(entries, start=1):
        scenario = entry.scenario
        settings = RunSettings(lease_s=scenario.lease_s, time_limit_s=scenario.time_limit_s,
                               recrawls=scenario.recrawls,
                               drift=parse_drift(scenario.drift, ZOO_DRIFT_SEED) if scenario.drift else None)
        verdicts = {}
        with SiteServer(catalog, slow_paths=dict(scenario.slow_pages)) as site, \
                StoreServers([entry.design, control]) as servers:
            for design, schedule in ((entry.design, scenario.schedule), (control, scenario.control_schedule)):
                on_progress(f"[zoo {number}/{len(entries)}] {design.name} on {entry.design.name}'s scenario")
                with tempfile.TemporaryDirectory(prefix="killtest-zoo-", dir=work_dir) as scratch:
                    history = run_kill_test(design, parse_schedule(schedule), site, scratch, settings,
                                            dsn=servers.dsn_for(design))
                verdicts[design.name] = check_run(design, 1, history, catalog)
        found = verdicts[entry.design.name]
        outcomes.append(ZooOutcome(entry.design.name, entry.mistake, entry.expect, scenario.describe(),
                                   found.findings, found.problems, verdicts[REFERENCE].findings,
                                   scenario.replay_command(entry.design.name)))
    return outcomes
