"""The bug zoo: designs with one classic mistake each, and the proof that killtest flags every one.

Each zoo design's spec (scrapers/zoo/*.toml) carries a [zoo] table: the mistake, the finding the
checker must report, and the scenario that exposes it (a kill schedule, and where needed a lease,
a slow page or a re-crawl). The correct idempotent design runs the very same scenario as the
control: it must come out clean, so a finding is the mistake's doing, not the scenario's.
"""

from __future__ import annotations

import shlex
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Callable

from fixture_site.catalog import build_catalog, parse_drift
from fixture_site.server import SiteServer
from harness.checker import FINDINGS, check_run
from harness.designs import Design
from harness.errors import KilltestError
from harness.registry import BUILT_IN_DESIGNS
from harness.runner import RunSettings, run_kill_test
from harness.schedule import parse_schedule
from harness.servers.stores import StoreServers
from harness.spec import SpecFile

CONTROL = "idempotent"
ZOO_LISTING_PAGES, ZOO_PER_PAGE = 2, 3  # 6 products, 8 requests: a scenario runs in about a second
SCENARIO_KEYS = {"mistake", "expect", "schedule", "control_schedule", "lease", "recrawls", "slow_pages", "time_limit",
                 "drift"}
ZOO_DRIFT_SEED = 1


@dataclass(frozen=True)
class Scenario:
    """What exposes one mistake: the kills, the lease, slow pages and re-crawls."""

    schedule: str
    control_schedule: str  # the same kills for the correct design; differs only where a point names a zoo line
    lease_s: float = 1.0
    recrawls: int = 0
    slow_pages: tuple[tuple[str, float], ...] = ()
    time_limit_s: float = 20.0
    drift: str = ""  # how the site changes before each re-crawl (fixture_site.catalog.parse_drift)

    def describe(self) -> str:
        """The scenario in a table cell: the kills, then whatever else it needs."""
        parts = [f"`{self.schedule}`", f"lease {self.lease_s:g} s"]
        parts += [f"{path} takes {seconds:g} s" for path, seconds in self.slow_pages]
        if self.recrawls:
            parts.append(f"then {self.recrawls} re-crawl{'s' if self.recrawls > 1 else ''}")
        if self.drift:
            parts.append(f"the site drifting ({self.drift}) before it")
        return ", ".join(parts)

    def replay_command(self, design: str) -> str:
        words = ["killtest", "replay", "--design", design, "--schedule", self.schedule, "--listing-pages",
                 str(ZOO_LISTING_PAGES), "--per-page", str(ZOO_PER_PAGE), "--lease", f"{self.lease_s:g}",
                 "--time-limit", f"{self.time_limit_s:g}", "--no-prefork"]
        if self.recrawls:
            words += ["--recrawls", str(self.recrawls)]
        if self.drift:
            words += ["--drift", self.drift, "--drift-seed", str(ZOO_DRIFT_SEED)]
        for path, seconds in self.slow_pages:
            words += ["--slow-page", f"{path}={seconds:g}"]
        return shlex.join(words)


@dataclass(frozen=True)
class ZooEntry:
    design: Design
    mistake: str
    expect: str  # a finding code of harness.checker.FINDINGS
    scenario: Scenario


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


def zoo_entries() -> list[ZooEntry]:
    """Every built-in design whose spec has a [zoo] table, in name order."""
    entries = []
    for design in sorted(BUILT_IN_DESIGNS.values(), key=lambda d: d.name):
        spec = SpecFile(design.spec_file)
        table = spec.data.get("zoo")
        if table is not None:
            entries.append(_entry(design, spec, table))
    return entries


def _entry(design: Design, spec: SpecFile, table: dict) -> ZooEntry:
    unknown = set(table) - SCENARIO_KEYS
    if unknown:
        raise spec.error("zoo", sorted(unknown)[0], f"unknown key zoo.{sorted(unknown)[0]}")
    if table.get("expect") not in FINDINGS:
        raise spec.error("zoo", "expect", f"zoo.expect must be one of {', '.join(FINDINGS)}")
    for key in ("schedule", "control_schedule"):
        if key in table:
            parse_schedule(table[key])  # a bad schedule is refused before anything runs
    slow = tuple((str(path), float(seconds)) for path, seconds in table.get("slow_pages", {}).items())
    scenario = Scenario(schedule=table["schedule"], control_schedule=table.get("control_schedule", table["schedule"]),
                        lease_s=float(table.get("lease", 1.0)),
                        recrawls=int(table.get("recrawls", 0)), slow_pages=slow,
                        time_limit_s=float(table.get("time_limit", 20.0)), drift=str(table.get("drift", "")))
    if scenario.drift:
        try:
            parse_drift(scenario.drift)
        except ValueError as error:
            raise spec.error("zoo", "drift", f"zoo.drift: {error}") from None
    return ZooEntry(design, table["mistake"], table["expect"], scenario)


def run_zoo(entries: list[ZooEntry], work_dir: str | None = None,
            on_progress: Callable[[str], None] = lambda message: None) -> list[ZooOutcome]:
    """Run each zoo design and the correct design on the zoo design's scenario; check both."""
    catalog = build_catalog(ZOO_LISTING_PAGES, ZOO_PER_PAGE)
    control = BUILT_IN_DESIGNS[CONTROL]
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
                                   found.findings, found.problems, verdicts[CONTROL].findings,
                                   scenario.replay_command(entry.design.name)))
    return outcomes


def zoo_markdown(outcomes: list[ZooOutcome], command: str) -> str:
    lines = ["# The bug zoo", "", f"Command: `{command}`", "",
             "Each design below is the idempotent design with one classic mistake. It runs the scenario that"
             f" exposes the mistake ({ZOO_LISTING_PAGES} listing pages of {ZOO_PER_PAGE} products), and so does"
             " the correct design, as the control. A verdict is right when killtest reports the expected"
             " finding on the zoo design and nothing on the control.", "",
             "| design | mistake | scenario | expected finding | killtest found | control | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for o in outcomes:
        found = ", ".join(f"**{f}**" if f == o.expect else f for f in o.findings) or "nothing"
        control = "clean" if o.control_clean else ", ".join(o.control_findings)
        lines.append(f"| {o.design} | {o.mistake} | {o.scenario} | {o.expect} | {found} | {control} |"
                     f" {'right' if o.as_expected else 'WRONG'} |")
    lines += ["", "Replay any of them alone:", ""] + [f"    {o.replay}" for o in outcomes]
    return "\n".join(lines) + "\n"


def selected(entries: list[ZooEntry], only: str | None) -> list[ZooEntry]:
    if not only:
        return entries
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    known = {e.design.name for e in entries}
    for name in wanted:
        if name not in known:
            raise KilltestError(f"{name!r} is not in the zoo; the zoo holds: {', '.join(sorted(known))}")
    return [e for e in entries if e.design.name in wanted]

