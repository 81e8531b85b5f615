"""The bug zoo's scenarios, read from the [zoo] tables of the zoo designs' specs.

Each zoo design's spec (scrapers/zoo/*.toml) carries a [zoo] table: the mistake, the finding the
checker must report, and the scenario that exposes it (a kill schedule, and where needed a lease,
a slow page or a re-crawl). The keys a [zoo] table may hold are killtest.harness.options.ZOO_KEYS, so each
scenario key is an option of `killtest replay`, and a scenario's replay line is made by the same
table (killtest.harness.options.replay_words). campaigns/zoo_runs.py runs them;
report/zoo_table.py shows them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from killtest.fixture_site.catalog import parse_drift
from killtest.harness.check.findings import FINDINGS
from killtest.harness.defaults import (
    ZOO_DRIFT_SEED,
    ZOO_LEASE_S,
    ZOO_LISTING_PAGES,
    ZOO_PER_PAGE,
    ZOO_REFERENCE_DESIGN,
    ZOO_TIME_LIMIT_S,
)
from killtest.harness.design.model import Design
from killtest.harness.design.registry import built_in_designs
from killtest.harness.design.specfile import SpecFile
from killtest.harness.errors import KilltestError
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.options import ZOO_KEYS, replay_words


@dataclass(frozen=True)
class Scenario:
    """What exposes one mistake: the kills, the lease, slow pages and re-crawls."""

    schedule: str
    control_schedule: str  # the same kills for the correct design; differs only where a point names a zoo line
    lease_s: float = ZOO_LEASE_S
    recrawls: int = 0
    slow_pages: tuple[tuple[str, float], ...] = ()
    time_limit_s: float = ZOO_TIME_LIMIT_S
    drift: str = ""  # how the site changes before each re-crawl (killtest.fixture_site.catalog.parse_drift)
    workers: int = 1  # worker processes per start (a pause of one lets another take its page over)
    aim_pauses: bool = False  # the site reprices the page a paused worker holds when another asks for it

    def describe(self) -> str:
        """The scenario in a table cell: the kills, then whatever else it needs."""
        parts = [f"`{self.schedule}`", f"lease {self.lease_s:g} s"]
        if self.workers > 1:
            parts.append(f"{self.workers} workers")
        if self.aim_pauses:
            parts.append("the paused worker's page repriced when another worker asks for it")
        parts += [f"{path} takes {seconds:g} s" for path, seconds in self.slow_pages]
        if self.recrawls:
            parts.append(f"then {self.recrawls} re-crawl{'s' if self.recrawls > 1 else ''}")
        if self.drift:
            parts.append(f"the site drifting ({self.drift}) before it")
        return ", ".join(parts)

    def replay_settings(self, design: str) -> dict[str, Any]:
        """The settings of `killtest replay` that run this scenario, keyed by option dest (harness/options.py).

        The zoo runs without pre-forking, and so does its replay; a setting left at its neutral value
        (no re-crawl, no drift) is left off the line.
        """
        return {"design": design, "schedule": self.schedule, "listing_pages": ZOO_LISTING_PAGES,
                "per_page": ZOO_PER_PAGE, "lease": self.lease_s, "time_limit": self.time_limit_s, "no_prefork": True,
                "workers": self.workers if self.workers > 1 else None, "aim_pauses": self.aim_pauses,
                "recrawls": self.recrawls or None, "drift": self.drift or None,
                "drift_seed": ZOO_DRIFT_SEED if self.drift else None,
                "slow_page": [f"{path}={seconds:g}" for path, seconds in self.slow_pages]}

    def replay_command(self, design: str) -> str:
        return shlex.join(["killtest", "replay", *replay_words(self.replay_settings(design))])


@dataclass(frozen=True)
class ZooEntry:
    design: Design
    mistake: str
    expect: str  # a finding code (killtest.harness.check.findings.Finding)
    scenario: Scenario
    reference: str = ZOO_REFERENCE_DESIGN  # the correct design run beside it: the idempotent one, or a fixed twin


def zoo_entries() -> list[ZooEntry]:
    """Every built-in design whose spec has a [zoo] table, in name order."""
    entries = []
    for design in sorted(built_in_designs().values(), key=lambda d: d.name):
        spec = SpecFile(design.spec_file)
        table = spec.data.get("zoo")
        if table is not None:
            entries.append(_entry(design, spec, table))
    return entries


def _entry(design: Design, spec: SpecFile, table: dict) -> ZooEntry:
    unknown = set(table) - set(ZOO_KEYS)
    if unknown:
        raise spec.error("zoo", sorted(unknown)[0], f"unknown key zoo.{sorted(unknown)[0]}")
    if table.get("expect") not in FINDINGS:
        raise spec.error("zoo", "expect", f"zoo.expect must be one of {', '.join(FINDINGS)}")
    for key in ("schedule", "control_schedule"):
        if key in table:
            parse_schedule(table[key])  # a bad schedule is refused before anything runs
    slow = tuple((str(path), float(seconds)) for path, seconds in table.get("slow_pages", {}).items())
    scenario = Scenario(schedule=table["schedule"], control_schedule=table.get("control_schedule", table["schedule"]),
                        lease_s=float(table.get("lease", ZOO_LEASE_S)),
                        recrawls=int(table.get("recrawls", 0)), slow_pages=slow,
                        time_limit_s=float(table.get("time_limit", ZOO_TIME_LIMIT_S)),
                        drift=str(table.get("drift", "")), workers=int(table.get("workers", 1)),
                        aim_pauses=bool(table.get("aim_pauses", False)))
    if scenario.drift:
        try:
            parse_drift(scenario.drift)
        except ValueError as error:
            raise spec.error("zoo", "drift", f"zoo.drift: {error}") from None
    return ZooEntry(design, table["mistake"], table["expect"], scenario,
                    str(table.get("reference", ZOO_REFERENCE_DESIGN)))


def selected(entries: list[ZooEntry], only: str | None) -> list[ZooEntry]:
    if not only:
        return entries
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    known = {e.design.name for e in entries}
    for name in wanted:
        if name not in known:
            raise KilltestError(f"{name!r} is not in the zoo; the zoo holds: {', '.join(sorted(known))}")
    return [e for e in entries if e.design.name in wanted]

