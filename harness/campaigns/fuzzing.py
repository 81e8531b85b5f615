"""`killtest fuzz`: Hypothesis searches kill schedules that break a promise, and the failure is shrunk.

1. search: Hypothesis draws a small catalog and a schedule that mixes every kind of point the design takes
   (harness/campaigns/fuzz_schedules.py); each is one run, held to the idempotent promises as explore holds its
   points. Hypothesis only generates here (no shrinking, no replay of its own), so a timed point that races
   the scraper cannot make it report a FlakyFailure;
2. shrink: the first failure is made smaller by our own greedy steps over exact points only (drop the timed
   points, drop a point, lower a point's number, shrink the catalog), each step one run, kept when it still
   fails. Exact runs repeat exactly, so the smallest schedule reproduces: it is the one printed as a
   `killtest replay` line. A power-cut point (`xw45`) shrinks as its trigger does.
A searched failure's kills at store writes are located at the program's lines (campaigns/fuzz_locate.py).
On a recorded site (a design whose spec names a recording: docs/how-to/record-your-site.md) the recording is
the catalog: no catalog size is drawn, a case's catalog is 0x0 (`Case.recorded`), every case runs on one
replay served by the orchestrator's `stage` for the whole search, and shrinking never tries a smaller catalog.
With `jobs` above 1, that many searches run at once in their own processes (harness/campaigns/parallel.py), on
seeds seed, seed+1, ...; each has its own site, work dirs and servers. The property tests of
tests/test_fuzz.py call `search` and `shrink` as the command does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness.campaigns.exploration import broken_promises, triage_of
from killtest.harness.campaigns.fuzz_locate import trial_reading, trial_words
from killtest.harness.campaigns.fuzz_schedules import catalog_sizes, exact, file_store, kill_schedules, line_points
from killtest.harness.campaigns.shrink_steps import smaller as _smaller
from killtest.harness.design.model import Design
from killtest.harness.design.site_spec import one_site
from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import parse_point
from killtest.harness.faults.schedule import KillSchedule
from killtest.harness.running.orchestrator import (
    Stage,
    check_phase,
    prefork_phase,
    run_phase,
    stage,
    store_servers_phase,
)
from killtest.harness.running.recorded import load_site
from killtest.harness.running.runner import RunSettings
from killtest.harness.running.write_plans import RecordingCache, record, resolve_schedule


@dataclass(frozen=True)
class Case:
    """One fuzzed run: a catalog (listing pages, products per page) and a schedule. On a recorded site
    the recording is the catalog: 0x0."""

    pages: int
    per_page: int
    schedule: str  # its spec

    @property
    def recorded(self) -> bool:
        return (self.pages, self.per_page) == (0, 0)

    @property
    def catalog(self) -> str:
        """How a report names the case's catalog: `2x3`, or `recording`."""
        return "recording" if self.recorded else f"{self.pages}x{self.per_page}"


@dataclass
class Trial:
    case: Case
    problems: list[str]  # empty: every promise kept
    exact: bool
    triage: dict = field(default_factory=dict)  # a failure's findings, keys, timeline (triage_of), where and place
    located_s: float = 0.0  # reading its store-write kills' stacks took (campaigns/fuzz_locate.py)


@dataclass
class FuzzResult:
    design: str
    trials: list[Trial] = field(default_factory=list)
    failure: Trial | None = None  # the first failure, as found
    shrunk: Trial | None = None  # the smallest failing case, exact: it replays
    shrink_runs: int = 0
    elapsed_s: float = 0.0

    @property
    def schedules_per_minute(self) -> float:
        return round(60 * (len(self.trials) + self.shrink_runs) / self.elapsed_s, 1) if self.elapsed_s else 0.0

    def to_json(self) -> dict:
        return {"design": self.design, "examples": len(self.trials), "elapsed_s": round(self.elapsed_s, 2),
                "schedules_per_minute": self.schedules_per_minute, "shrink_runs": self.shrink_runs,
                "failure": dataclasses.asdict(self.failure) if self.failure else None,
                "shrunk": dataclasses.asdict(self.shrunk) if self.shrunk else None,
                "trials": [dataclasses.asdict(t) for t in self.trials]}


class Bench:
    """Where fuzzed runs happen: the design's store servers and launcher, a site per catalog (or the one
    replay of a recorded site, `replay`), and the store writes recorded per catalog."""

    def __init__(self, design: Design, run_settings: RunSettings, servers: Any, launchers: dict,
                 work_dir: str | None, replay: Stage | None = None, power_cut: bool = False) -> None:
        self.design, self.settings, self.work_dir, self.power_cut = design, run_settings, work_dir, power_cut
        self.servers, self.launchers, self.replay = servers, launchers, replay
        self.recordings: dict[tuple[int, int], RecordingCache] = {}
        self.lines = line_points(design)

    @property
    def recorded(self) -> bool:
        """Whether the design meets a recorded site: its catalog is the recording, never drawn."""
        return self.replay is not None

    @contextlib.contextmanager
    def on(self, pages: int, per_page: int) -> Iterator[Stage]:
        if self.replay is not None:
            if (pages, per_page) != (0, 0):
                raise KilltestError(f"design {self.design.name!r} meets a recorded site: its catalog is the"
                                    f" recording (0x0), not {pages}x{per_page} products")
            yield self.replay
            return
        if min(pages, per_page) < 1:
            raise KilltestError(f"design {self.design.name!r} meets the shop: a catalog of {pages}x{per_page}"
                                " products is no catalog (0x0 is a recorded site's)")
        with SiteServer(build_catalog(pages, per_page)) as site:
            yield Stage(site, self.servers, self.launchers)

    def store_writes(self, on: Stage, pages: int, per_page: int) -> list[int]:
        """The first start's store writes strace can aim at, on this catalog (one recording, cached), from
        its first request on: a kill while it sets up its store, before any work, proves nothing."""
        if not file_store(self.design) or self.settings.workers > 1:
            return []
        recording = record(self.design, (), on, self.settings, self.work_dir, self.cache(pages, per_page))
        if recording is None:
            return []
        first = recording.write_after_request(1) or 1
        return [n for n in recording.reachable_writes() if n >= first]

    def cache(self, pages: int, per_page: int) -> RecordingCache:
        return self.recordings.setdefault((pages, per_page), {})

    def trial(self, case: Case, on: Stage | None = None, locate: bool = False) -> Trial:
        """One run of the case, held to the design's promises; a write strace cannot reach is no failure. `locate`:
        its store-write kills' stacks are read (a search's trial; not a shrink's step: only the search is grouped)."""
        if on is None:
            with self.on(case.pages, case.per_page) as stage_on:
                return self.trial(case, stage_on, locate)
        points = tuple(parse_point(p, self.design) for p in case.schedule.split(","))
        is_exact, cache = all(exact(p, self.design) for p in points), self.cache(case.pages, case.per_page)
        try:
            aimed = resolve_schedule(KillSchedule(None, points), self.design, on, self.settings, work_dir=self.work_dir,
                                     cache=cache)
        except KilltestError:
            return Trial(case, [], is_exact)  # a later start's write strace cannot aim at: not a run
        with trial_reading(self.design, aimed.points) if locate else contextlib.nullcontext() as read:
            history = run_phase(on, self.design, aimed, self.settings, work_dir=self.work_dir, prefix="killtest-fuzz-")
        found, located_s = read() if read is not None else ([], 0.0)
        verdict = check_phase(self.design, 1, history, on.site.catalog)  # fuzz --strict hands in design.strict()
        problems = broken_promises(verdict)  # told in words, as explore's points, at the program's line when known
        words = trial_words(aimed.points, history, cache, self.design.name, case.catalog, found)
        return Trial(case, problems, is_exact, {**triage_of(verdict, history), **words} if problems else {},
                     round(located_s, 4))


@contextlib.contextmanager
def bench(design: Design, run_settings: RunSettings, *, prefork: bool = True,
          work_dir: str | None = None, power_cut: bool = False) -> Iterator[Bench]:
    """The orchestrator's store-server and pre-fork phases for one design; a site per catalog in `Bench.on`. A design
    naming a recording meets its replay, set up once by the orchestrator's `stage`. `power_cut`: x points too."""
    site = one_site([design])
    if site is not None:
        with stage(load_site(site), [design], prefork=prefork) as on:
            yield Bench(design, run_settings, on.servers, on.launchers, work_dir, replay=on, power_cut=power_cut)
        return
    with store_servers_phase([design]) as servers, prefork_phase([design], prefork) as launchers:
        yield Bench(design, run_settings, servers, launchers, work_dir, power_cut=power_cut)


def search(on: Bench, examples: int, seed: int, max_seconds: float | None = None,
           on_trial: Callable[[Trial], None] = lambda trial: None) -> list[Trial]:
    """Up to `examples` Hypothesis-drawn cases, each run once; every trial, failures included, in order."""
    trials: list[Trial] = []

    def run(case: Case, stage_on: Stage) -> None:
        trials.append(trial := on.trial(case, stage_on, locate=True))
        on_trial(trial)

    _each_case(on, examples, seed, None if max_seconds is None else time.monotonic() + max_seconds, run)
    return trials


def draw_cases(on: Bench, examples: int, seed: int) -> list[Case]:
    """The cases `search` would run with this seed, drawn the same way but not run: one pytest item each
    (killtest.spread). Hypothesis only generates: a seed gives the same cases wherever the same writes are recorded."""
    cases: list[Case] = []
    _each_case(on, examples, seed, None, lambda case, stage_on: cases.append(case))
    return cases


def _each_case(on: Bench, examples: int, seed: int, deadline: float | None,
               visit: Callable[[Case, Stage], None]) -> None:
    """Draw up to `examples` cases with Hypothesis seed `seed`, each on a site of its catalog, for `visit`."""

    @hypothesis_seed(seed)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def one_case(data: st.DataObject) -> None:
        if deadline is not None and time.monotonic() > deadline:
            return
        pages, per_page = (0, 0) if on.recorded else data.draw(catalog_sizes(), label="catalog")
        with on.on(pages, per_page) as stage_on:
            writes = on.store_writes(stage_on, pages, per_page)
            requests = stage_on.site.catalog.full_crawl_requests
            schedule = data.draw(kill_schedules(on.design, requests, writes, on.lines, power_cut=on.power_cut),
                                 label="schedule")
            visit(Case(pages, per_page, schedule.spec), stage_on)

    one_case()


def shrink(on: Bench, failing: Case, on_step: Callable[[Trial], None] = lambda trial: None) -> tuple[Trial, int]:
    """The smallest failing case reachable from `failing` by exact steps, and how many runs it took. When the
    failure needs a timed point, the case is returned as found, marked not exact."""
    runs = 0
    tried: dict[Case, Trial | None] = {}
    target: set[str] = set()  # the promises the failure broke: a smaller case must break one of them

    def fails(case: Case) -> Trial | None:
        nonlocal runs
        if case not in tried:
            runs += 1
            trial = on.trial(case)
            on_step(trial)
            same = not target or bool(target & set(broken(trial)))
            tried[case] = trial if trial.problems and trial.exact and same else None
        return tried[case]

    points = failing.schedule.split(",")
    exact_only = [p for p in points if exact(parse_point(p, on.design), on.design)]
    best = fails(dataclasses.replace(failing, schedule=",".join(exact_only))) if exact_only else None
    if best is not None:
        target.update(broken(best)[:1])  # shrink this bug (the first it broke), not another one a smaller case shows
    if best is None:
        why = ("it did not repeat with its exact points alone: it needs a timed point, or the design's own"
               " timing (a lease about as long as a start's boot)")
        return Trial(failing, [why], False), runs
    improved = True
    while improved:
        improved = False
        for candidate in _smaller(best.case):
            found = fails(candidate)
            if found is not None:
                best, improved = found, True
                break
    return best, runs


def broken(trial: Trial) -> list[str]:
    """The promises a trial broke, by name, in the checker's order: `lost 1 of 6 records (broke
    no_lost_records)` -> no_lost_records."""
    return [problem.rsplit("(broke ", 1)[-1].rstrip(")") for problem in trial.problems if "(broke " in problem]
