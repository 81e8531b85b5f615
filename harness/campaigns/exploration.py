"""Exhaustive crash points: kill once at every request boundary, every store write and every commit-path
line, and check each. Every point is one run: the first start dies exactly there, the next one finishes the
crawl, and the outcome is held to the promises the design makes. Store-write points (`w5`) reach any program,
in any language: one recording run lists the first start's writes to its store (running/write_plans.py), each
with its after twin (`aw5`: killed once it is done: faults/points/after_store_write.py, twin_states.py). With
`power_cut` (`--power-cut`), each store write `w5` of a file store is followed by its power-cut twin `xw5`
(faults/points/power_cut.py): the same write, the power gone instead of a SIGKILL, so what no fsync made
durable is lost. No `xr5`: a file's durable state changes only at a store write (fsync counts as one), so a cut
at a request loses what a cut at the next store write loses. With `jobs` above 1 the points are dealt to that
many processes, each with its own site, work dirs and servers (campaigns/parallel.py); the outcomes are the same.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from killtest.fixture_site.catalog import Catalog
from killtest.harness.campaigns.coverage import covered
from killtest.harness.campaigns.locator import Locator, add_located, held_start
from killtest.harness.campaigns.parallel import chunks, run_jobs
from killtest.harness.campaigns.point_words import describe, logical_write
from killtest.harness.campaigns.twin_states import join_twin_states
from killtest.harness.check.distinct import request_before, triage_of
from killtest.harness.check.findings import Finding
from killtest.harness.check.verdict import RunVerdict, Validity
from killtest.harness.design.model import Design
from killtest.harness.errors import KilltestError
from killtest.harness.faults.file_roles import off_aim_words, store_path
from killtest.harness.faults.points import KillPoint, parse_point
from killtest.harness.faults.points.after_store_write import with_after_twins
from killtest.harness.faults.points.line import AtLine, anchor_for, shown_path
from killtest.harness.faults.points.power_cut import PowerCutAtStoreWrite, refuse_what_cannot_lose_power
from killtest.harness.faults.points.request import AtRequest
from killtest.harness.faults.points.store_write import AtStoreWrite, require_strace
from killtest.harness.faults.schedule import KillSchedule
from killtest.harness.history import History
from killtest.harness.running.orchestrator import Stage, check_phase, run_phase, stage
from killtest.harness.running.runner import RunSettings
from killtest.harness.running.write_plans import RecordingCache, resolve_schedule, store_write_points

EXPLORE_HITS = (1, 2)  # the first and second execution of each line: a listing page, then a product


def commit_path_lines(design: Design) -> list[tuple[str, int]]:
    """(project-relative file, line) for the first line of every statement in the design's commit path."""
    tree, relative = ast.parse(open(design.source_file, encoding="utf-8").read()), shown_path(design.source_file)
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in design.commit_path:
            body = node.body[1:] if ast.get_docstring(node) else node.body
            for statement in body:
                lines.update(n.lineno for n in ast.walk(statement) if isinstance(n, ast.stmt))
    return [(relative, line) for line in sorted(lines)]


def crash_points(design: Design, full_crawl_requests: int,
                 store_writes: list[KillPoint] | None = None) -> list[KillPoint]:
    """Every request; every store write strace can aim at (`store_writes`, from one recording: see
    write_plans.store_write_points); and, for a Python design, every statement of its commit path at its
    1st and 2nd run."""
    points: list[KillPoint] = [AtRequest(k) for k in range(1, full_crawl_requests + 1)]
    points += store_writes or []
    if design.module is None:
        return points  # any other program: its lines cannot be traced
    # Named by function and offset, so a printed point still hits the same line after an edit above it.
    points += [AtLine(path, line, hit, anchor=anchor_for(path, line))
               for path, line in commit_path_lines(design) for hit in EXPLORE_HITS]
    return points


@dataclass
class PointOutcome:
    point: str
    landed: bool  # False: the crawl finished before the point was reached
    valid: bool
    problems: list[str]
    rows: int
    requests: int
    findings: list[str] = field(default_factory=list)  # a code per problem (check/findings.py)
    waived: list[str] = field(default_factory=list)  # what it broke of the promises the spec waives (not broken)
    where: str = ""  # where the kill landed, in the user's terms (harness/campaigns/point_words.py)
    place: str = ""  # the kind of place, which distinct failures are grouped by where no line is known
    line: str = ""  # the user's own `FILE:LINE` of a broken point (its located write, its line): the grouping key
    keys: dict = field(default_factory=dict)  # lost, duplicated and unexpected keys (a broken point's)
    timeline: dict = field(default_factory=dict)  # what the triage page draws (a broken point's)
    key_counts: dict = field(default_factory=dict)  # how many keys each of `keys`' lists stands for (they are cut)
    page: str = ""  # the path of the killed start's last request before the kill (a request point's: its page)
    write: str = ""  # the logical write a store-write point lands inside (`w11-w12`), when of several writes
    off_aim: str = ""  # a store-write kill that landed at another write than its point names: where (not tested)


@dataclass
class Exploration:
    design: str
    claims_idempotence: bool
    strict: bool = False  # judged by every idempotence promise (--strict), not by the spec's own
    prefork: bool = False
    outcomes: list[PointOutcome] = field(default_factory=list)
    elapsed_s: float = 0.0  # every point's run, and the locating runs among them
    locate_runs: int = 0  # points run once more to locate their store write in the program (campaigns/locate.py)
    locate_s: float = 0.0  # their time and the stacks read in points' own runs (summed over -j's processes)
    jobs_s: float = 0.0  # the time of the processes that ran the points, summed like locate_s (elapsed_s at -j 1)
    stacks_read: int = 0  # held writes' stacks read in points' own runs; read_s, their part of locate_s
    read_s: float = 0.0
    located_in_run: int = 0  # kinds of failure located from the stack read in their first point's own run
    coverage: dict = field(default_factory=dict)  # pages killed at, writes seen and explored, left out (coverage.py)

    @property
    def broken(self) -> list[PointOutcome]:
        return [o for o in self.outcomes if not o.valid]

    @property
    def schedules_per_minute(self) -> float:
        return round(60 * len(self.outcomes) / self.elapsed_s, 1) if self.elapsed_s else 0.0

    def to_json(self) -> dict:
        return {"design": self.design, "claims_idempotence": self.claims_idempotence, "strict": self.strict,
                "prefork": self.prefork,
                "points": len(self.outcomes), "broken": len(self.broken), "elapsed_s": round(self.elapsed_s, 2),
                "locate_runs": self.locate_runs, "locate_s": round(self.locate_s, 2), "jobs_s": round(self.jobs_s, 2),
                "located_in_run": self.located_in_run, "stacks_read": self.stacks_read, "read_s": round(self.read_s, 2),
                "schedules_per_minute": self.schedules_per_minute, "coverage": self.coverage,
                "outcomes": [dataclasses.asdict(o) for o in self.outcomes]}


def with_power_cuts(points: list[KillPoint]) -> list[KillPoint]:
    """`points` with each plain store write `w5` followed by its power-cut twin `xw5`, aimed alike (once)."""
    given = {point.spec for point in points}
    return [each for point in points for each in (point, *(twin for twin in _power_cut_twin(point)
                                                            if twin.spec not in given))]


def _power_cut_twin(point: KillPoint) -> list[KillPoint]:
    if type(point) is not AtStoreWrite or point.connection is not None or point.server is not None:  # a command
        return []
    return [PowerCutAtStoreWrite(point.index, plan=point.plan, resolved=point.resolved, file=point.file)]


def refuse_power_cut(design: Design, command: str, needs_strace: bool = True) -> None:
    """`--power-cut` where the power cannot be cut under this design's store: one line saying why, before any run
    or directory (the commands and killtest.spread); each power-cut point refuses alike as it runs (power_cut.py)."""
    try:
        refuse_what_cannot_lose_power("xw<n>", [design])
        if needs_strace:
            require_strace("xw<n>")
    except KilltestError as error:
        raise KilltestError(f"{command} --power-cut: {error}") from None


def all_crash_points(design: Design, on: Stage, settings: RunSettings, work_dir: str | None = None,
                     cache: RecordingCache | None = None, power_cut: bool = False) -> list[KillPoint]:
    """`crash_points` on the stage's catalog, the store writes found by one recording run (each followed by
    its power-cut twin with `power_cut`, and by its after twin)."""
    writes = with_after_twins(store_write_points(design, on, settings, work_dir, cache))
    return crash_points(design, on.site.catalog.full_crawl_requests, with_power_cuts(writes) if power_cut else writes)


def explore(design: Design, on: Stage, settings: RunSettings, work_dir: str | None = None,
            points: list[KillPoint] | None = None,
            on_progress: Callable[[str], None] = lambda message: None, power_cut: bool = False,
            strict: bool = False, locate: bool = False) -> Exploration:
    """Kill `design` at each point in turn (all crash points by default) and check every outcome.

    `on` is the orchestrator's stage (site, store servers, pre-forked launchers): each point is one
    run phase and one check phase, with a fresh work dir and database, as any campaign's run.
    """
    cache: RecordingCache = {}
    given = points is not None
    if points is None:
        points = all_crash_points(design, on, settings, work_dir, cache, power_cut)
    elif power_cut:
        points = with_power_cuts(points)
    exploration = Exploration(design.name, design.claims_idempotence, strict, prefork=design.name in on.launchers)
    began, locator = time.monotonic(), Locator(design) if locate else None
    for number, point in enumerate(points, start=1):
        on_progress(f"[explore {design.name}] point {number}/{len(points)}: {point.spec}")
        exploration.outcomes.append(explore_located(design, on, settings, point, work_dir, cache, strict, locator,
                                                    number - 1))
    if locator is not None:
        locator.finish()  # each kind's last broken point, while the stage is up
        add_located(exploration, [locator.summary()])
    join_twin_states(exploration.outcomes, design)  # an after-point and the next write's before-point: one state
    exploration.elapsed_s = time.monotonic() - began
    exploration.coverage = covered(design, exploration.outcomes, on.site.catalog, settings, cache, given)
    return exploration


def explore_located(design: Design, on: Stage, settings: RunSettings, point: KillPoint, work_dir: str | None,
                    cache: RecordingCache, strict: bool, locator: Locator | None, index: int) -> PointOutcome:
    """`explore_point`, then, with a `locator`, the program's line of its store write when it is the first
    point of a kind of failure (its first start once more, here, or at the end: campaigns/locator.py)."""
    outcome = explore_point(design, on, settings, point, work_dir, cache, strict, locator)
    if locator is not None:
        locator.after(index, point, outcome,
                      lambda: held_start(design, on, settings, point, work_dir, cache))
    return outcome


def explore_point(design: Design, on: Stage, settings: RunSettings, point: KillPoint, work_dir: str | None,
                  cache: RecordingCache, strict: bool = False, locator: Locator | None = None) -> PointOutcome:
    """One crash point: aimed (a store write, by a recording), run, and held to the design's promises (every
    idempotence promise when `strict`); what it broke of a promise the spec waives is noted, not broken. A
    `locator` may read the held write's stack in this run (campaigns/locator.Locator.reading)."""
    schedule = resolve_schedule(KillSchedule(seed=None, points=(point,)), design, on, settings, work_dir=work_dir,
                                cache=cache)
    recording = cache.get((design.name, ""))  # the first start's, which aimed the point (a store write)
    reading = (locator.reading(point, describe(schedule.points[0], History(), recording)[1])
               if locator is not None else contextlib.nullcontext())
    with reading:
        history = run_phase(on, design, schedule, settings, work_dir=work_dir, prefix="killtest-explore-")
    verdict = check_phase(design.strict() if strict else design, 1, history, on.site.catalog)
    landed = verdict.kills + verdict.kills_before_work > 0
    problems = broken_promises(verdict)
    waived: list[str] = []
    if not strict and design.does_not_promise and not verdict.proved_nothing:
        every = dataclasses.replace(design, claims_idempotence=True, does_not_promise=frozenset())
        waived = [p for p in broken_promises(check_phase(every, 1, history, on.site.catalog)) if p not in problems]
    outcome = PointOutcome(point.spec, landed, not problems, problems, verdict.rows, verdict.requests,
                           waived=waived)
    if landed or problems:  # every point the kill reached, for the table's "where" (about 0.1 ms a point)
        outcome.where, outcome.place = describe(schedule.points[0], history, recording)
        outcome.write = logical_write(schedule.points[0], recording)
        kill = history.first("kill") or history.first("power_lost")
        made = request_before(history, kill["t"], kill.get("start", 0)) if kill else None
        outcome.page = made[1] if made else ""
        off_aim = next((k["aimed_elsewhere"] for k in history.of_type("kill") if k.get("aimed_elsewhere")), "")
        if off_aim:  # the kill was delivered, at another write than the recording aimed at: say where
            outcome.where += f" (off its aim: {off_aim_words(off_aim, store_path(design.store.path))})"
            outcome.off_aim = off_aim
    if problems:  # drawn only where a user will read it: a broken point
        found = triage_of(verdict, history)
        outcome.findings, outcome.keys, outcome.timeline = found["findings"], found["keys"], found["timeline"]
        if isinstance(point, AtLine):  # the kill's line is the program's own: a located write there is the same bug
            outcome.line = f"{point.path}:{point.line}"
        outcome.key_counts = key_counts(verdict)
    return outcome


def key_counts(verdict: RunVerdict) -> dict[str, int]:
    """How many keys were lost, duplicated, wrong and unreadable: the page's table shows the first few of each."""
    kinds = ("lost", "not_stored_unfinished", "duplicated", "unexpected", "unreadable")
    return {kind: verdict.categories.get(kind, {}).get("count", 0) for kind in kinds}


def broken_promises(verdict: RunVerdict) -> list[str]:
    """The promises a point broke. A point the crawl finished before, or one that landed before any
    work, proved nothing: that is not a broken point. A check that could not judge the run is."""
    if verdict.validity == Validity.VALID.value or verdict.proved_nothing:
        return []
    return [problem for code, problem in zip(verdict.findings, verdict.problems)
            if code != Finding.NO_KILL_LANDED.value]


def explore_design(design: Design, catalog: Catalog, settings: RunSettings, points: list[KillPoint] | None, *,
                   work_dir: str | None = None, prefork: bool = True, progress: Any = None,
                   jobs: int = 1, power_cut: bool = False, strict: bool = False,
                   locate: bool = False) -> Exploration:
    """`explore` through the orchestrator's phases: the site, the design's store server, its pre-forked
    launcher (a Python design, when `prefork`), then every point (all crash points when `points` is None).

    `progress` is a killtest.harness.running.progress.Progress, or any callable taking one line, or None. With
    `jobs` above 1, the points are dealt to that many processes (no more than points: a job re-imports killtest),
    each with its own stage. `power_cut` adds the power-cut twin of each store write.
    """
    on_progress = _step_of(progress)
    jobs = jobs if points is None else min(jobs, len(with_power_cuts(points) if power_cut else points))
    if jobs <= 1:
        with stage(catalog, [design], prefork=prefork) as on:
            return explore(design, on, settings, work_dir, points, on_progress=on_progress, power_cut=power_cut,
                           strict=strict, locate=locate)
    began = time.monotonic()
    cache: RecordingCache = {}
    given = points is not None
    if points is None:
        with stage(catalog, [design]) as on:
            points = all_crash_points(design, on, settings, work_dir, cache, power_cut=power_cut)
    elif power_cut:
        points = with_power_cuts(points)
    numbered = list(enumerate(point.spec for point in points))
    parts = run_jobs(_explore_part, [(design, catalog, settings, part, work_dir, prefork, len(numbered), strict,
                                      locate) for part in chunks(numbered, jobs)], jobs, on_progress, shared=True)
    exploration = Exploration(design.name, design.claims_idempotence, strict,
                              prefork=prefork and design.module is not None)
    exploration.outcomes = [outcome for _, outcome in sorted(pair for part, _ in parts for pair in part)]
    exploration.elapsed_s = time.monotonic() - began
    if locate:
        add_located(exploration, [found for _, found in parts])
    join_twin_states(exploration.outcomes, design)
    exploration.coverage = covered(design, exploration.outcomes, catalog, settings, cache, given)
    return exploration


def _explore_part(design: Design, catalog: Catalog, settings: RunSettings, numbered: list[tuple[int, str]],
                  work_dir: str | None, prefork: bool, total: int, strict: bool, locate: bool,
                  lines: Any, claims: Any) -> tuple[list[tuple[int, PointOutcome]], dict]:
    """One process's share of the points, on a stage of its own; what its locator found, its runs and time
    (`claims`: the kinds of failure the jobs are locating, shared by them: campaigns/locator.Locator)."""
    cache: RecordingCache = {}
    outcomes = []
    locator = Locator(design, claims) if locate else None
    with stage(catalog, [design], prefork=prefork) as on:
        for index, spec in numbered:
            lines.put(f"[explore {design.name}] point {index + 1}/{total}: {spec}")
            outcomes.append((index, explore_located(design, on, settings, parse_point(spec, design), work_dir, cache,
                                                    strict, locator, index)))
        if locator is not None:
            locator.finish()
    return outcomes, locator.summary() if locator else {}


def _step_of(progress: Any) -> Callable[[str], None]:
    if progress is None:
        return lambda message: None
    return progress.step if hasattr(progress, "step") else progress
