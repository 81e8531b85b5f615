"""One kill-test run: start a scraper, end each start at its kill point, restart it, let the last one finish.

`run_kill_test` goes through named phases:
1. prepare: check the schedule against what the run was given, clear the site, write `run_started`;
2. for each planned start: close the dead start's door to the site, after a kill wait (running.restart_wait), start
   it (unless a point that hit one worker left it running), arm its point (`point.arm`: the request kind hooks the
   site), wait for it (`point.wait_s`), then kill and record: the point fires (`point.fire`) or fired by itself (a
   request or line point), and the runner writes `kill`, `worker_restarted`, `time_limit`, `process_exited` or
   `crash` (a pause kills nothing: its target, running.target, writes `paused` and `resumed`, and the start goes on);
3. collect the history (killtest.harness.running.collect): requests, scraper events, each start's last output,
   store records, side effects, then `run_finished`. The runner knows no kill-point kind by name: it asks the point.

Each start is one or more worker processes (running.processes), each in a process group of its own, so a kill
reaches every process the scraper made. No process outlives the run, whatever happens.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from killtest.fixture_site.catalog import Drift
from killtest.fixture_site.server import SiteServer
from killtest.harness import defaults, lifeline
from killtest.harness.check.complaint import complaint
from killtest.harness.design.model import Design, Launch
from killtest.harness.design.stores import held_leases, kind_of
from killtest.harness.errors import KilltestError, ScraperStartError
from killtest.harness.faults.disk_model import DiskModel, under_the_disk_model
from killtest.harness.faults.points import Armed, KillPoint, NotArmed
from killtest.harness.faults.points.store_write import gate_missed
from killtest.harness.faults.schedule import KillSchedule
from killtest.harness.history import History
from killtest.harness.running import collect
from killtest.harness.running.kill_state import store_state
from killtest.harness.running.processes import Start, spawn
from killtest.harness.running.restart_wait import RestartDelay, RestartWait
from killtest.harness.running.site_drift import SiteDrift
from killtest.harness.running.start_watch import CpuWaits, Stalled, StartWatch, wait_watching
from killtest.harness.running.target import StartTarget, power_loss_mount


@dataclass(frozen=True)
class RunSettings:
    """What stays the same across the starts of one run."""

    lease_s: float = 3.0
    time_limit_s: float = defaults.TIME_LIMIT_S
    # Crawls of the same store after the killed one, each left to finish: for designs that take {crawl}.
    recrawls: int = 0
    finish: bool = True  # the start that finishes the crawl after the kills (False: a locating run, campaigns/locator)
    workers: int = 1  # worker processes per start, on one store; every kill point hits them all
    # The site's content drifts (killtest.fixture_site.catalog.drifted): before every re-crawl, and once
    # `drift_during_s` into the killed crawl when that is set.
    drift: Drift | None = None
    drift_during_s: float | None = None
    # A start with no request, output or store change for this long is stuck: stopped, a liveness
    # failure that says so (killtest.harness.running.start_watch). None: only the time limit stops it.
    no_progress_s: float | None = defaults.NO_PROGRESS_S
    # What a flush costs (killtest.harness.faults.disk_model): every start runs under strace's delay. None: no strace.
    disk: DiskModel | None = None
    aim_pauses: bool = False  # a paused worker's page is repriced when another worker asks for it (running/target.py)
    # The start-up measured before the runs (running/pace.py): a start alive past it without a request is waiting.
    startup_s: float | None = None
    restart_delay: RestartDelay = RestartDelay()  # a supervisor's wait after a kill (running/restart_wait.py)


@dataclass
class _Run:
    """One run in progress: what its phases share."""

    design: Design
    schedule: KillSchedule
    site: SiteServer
    settings: RunSettings
    launch: Launch
    location: str
    launcher: object
    restart_store: Callable[[], float] | None
    on_progress: Callable[[str], None]
    history: History = field(default_factory=History)
    began: float = 0.0
    wall_clock_at_start: float = 0.0  # designs stamp their writes with time.time(); this turns one into history time
    deadline: float = 0.0
    cpu: CpuWaits = field(default_factory=lambda: CpuWaits(0.0))  # waits for a CPU, which move the deadline
    drift: SiteDrift | None = None
    starts: list[Start] = field(default_factory=list)
    current: Start | None = None  # the start now running, if any
    outcome: str = "completed"
    crawl_done: int = 0
    power_loss_mount: Any = None  # the mount over the work dir while a power-cut point's run is on (target.py)
    restarts: RestartWait = field(default_factory=lambda: RestartWait(RestartDelay()))

    def since_began(self) -> float:
        return time.monotonic() - self.began

    def held_leases(self) -> list:
        return held_leases(self.design, self.location)

    def launch_for(self, crawl: int) -> Launch:
        return replace(self.launch, crawl=crawl)


def run_kill_test(design: Design, schedule: KillSchedule, site: SiteServer, work_dir: str,
                  settings: RunSettings = RunSettings(),
                  on_progress: Callable[[str], None] = lambda message: None, launcher=None,
                  dsn: str = "", restart_store: Callable[[], float] | None = None,
                  servers: tuple[tuple[str, str], ...] = ()) -> History:
    """Kill-test `design` once against `site`; its store goes in `work_dir` (or the database `dsn`).

    Returns the run's history. `launcher`, a killtest.harness.running.prefork.Zygote for this design, forks each start
    instead of executing a new interpreter: the same process behaviour without the start-up cost.
    `restart_store` crashes and restarts the store's server (for `s` kill points).
    """
    run = _prepare(design, schedule, site, work_dir, settings, on_progress, launcher, dsn, restart_store, servers)
    planned = _planned_starts(schedule, settings)
    # The starts' TMPDIR, removed with the run: what a killed start left there (a browser's profile) goes too.
    with lifeline.temp_dir(prefix="killtest-tmp-") as scratch, power_loss_mount(run, work_dir):
        run.launch = replace(run.launch, temp_dir=scratch)  # the power-loss mount covers work_dir only
        try:
            for number, (point, crawl) in enumerate(planned, start=1):
                if crawl <= run.crawl_done:
                    continue  # that crawl finished before its kill points ran out
                if not _start_until_its_point(run, point, crawl, f"point {number}/{len(planned)}"):
                    break
        finally:
            site.set_request_hook(None)
            assert run.drift is not None
            run.drift.restore()
            if run.current is not None and run.current.running:
                run.current.kill()
            site.close_doors()  # after taking in what the dead starts sent through them
    return _collect(run)


def _prepare(design: Design, schedule: KillSchedule, site: SiteServer, work_dir: str, settings: RunSettings,
             on_progress: Callable[[str], None], launcher, dsn: str,
             restart_store: Callable[[], float] | None, servers: tuple[tuple[str, str], ...] = ()) -> _Run:
    """Phase 1: refuse what this run cannot do, clear the site's logs, and write `run_started`."""
    for point in schedule.points:
        point.check_runnable(design, settings.workers, restart_store is not None)
    if settings.recrawls and not design.can_recrawl:
        raise KilltestError(f"design {design.name!r} does not take {{crawl}}, so it cannot be re-crawled")
    # The declared servers' URLs ({redis_url}) are in the launch before anything reads it (the store's location).
    launch = Launch(base_url=site.base_url, work_dir=work_dir, lease_s=settings.lease_s, dsn=dsn, servers=servers,
                    open_door=site.open_door)
    run = _Run(design, schedule, site, settings, launch, design.store_location(launch), launcher, restart_store,
               on_progress, restarts=RestartWait(settings.restart_delay), cpu=CpuWaits(settings.time_limit_s))
    site.request_log.clear()
    site.webhooks.clear()
    site.set_request_hook(None)
    run.began = time.monotonic()
    run.wall_clock_at_start = time.time()
    run.deadline = run.began + settings.time_limit_s
    run.history.add("run_started", 0.0, design=design.name, seed=schedule.seed,
                    kill_points=[p.spec for p in schedule.points],
                    base_url=site.base_url, lease_s=settings.lease_s, time_limit_s=settings.time_limit_s,
                    products=len(site.catalog.products), full_crawl_requests=site.catalog.full_crawl_requests,
                    wall_clock_at_start=run.wall_clock_at_start, reports_leases=design.reports_leases,
                    drift=settings.drift.spec if settings.drift else None,
                    drift_seed=settings.drift.seed if settings.drift else None,
                    recrawls=settings.recrawls, workers=settings.workers, measured_startup_s=settings.startup_s,
                    restart_delay=str(settings.restart_delay),
                    toxics=site.toxics[0] if site.toxics else None,
                    toxic_seed=site.toxics[1] if site.toxics else None)
    run.drift = SiteDrift(site, settings.drift, run.history, run.began)
    if settings.drift is not None and settings.drift_during_s is not None:
        run.drift.schedule(settings.drift_during_s)
    return run


def _planned_starts(schedule: KillSchedule, settings: RunSettings) -> list[tuple[KillPoint | None, int]]:
    """Every start the run may make: one per kill point, the one that finishes the crawl (unless not `finish`),
    then the re-crawls."""
    planned: list[tuple[KillPoint | None, int]] = [(point, 1) for point in schedule.points]
    return planned + [(None, 1)] * settings.finish + [(None, crawl) for crawl in range(2, 2 + settings.recrawls)]


def _start_until_its_point(run: _Run, point: KillPoint | None, crawl: int, which: str) -> bool:
    """Phase 2 for one point: start, arm, wait for the point, kill and record. False: the run stops here."""
    if run.current is None and run.starts:  # the dead start's late requests stay its own, not the next point's
        run.site.shut_door()
        run.deadline += run.restarts.wait(run.history, run.began, len(run.starts), run.on_progress)
    armed: Armed = NotArmed() if point is None else point.arm(run.site)
    try:
        if run.current is None:  # a point that hit one worker leaves the start running
            _start(run, point, crawl)
        assert run.current is not None
        armed.watch(run.current)
        what = "runs to the end" if point is None else f"kill at {point.spec}"
        again = f" (re-crawl {crawl - 1})" if crawl > 1 else ""
        run.on_progress(f"start {run.current.index + 1}, {which}{again}, {what}")
        return _wait_then_kill(run, point, armed, crawl)
    finally:
        armed.disarm()


def _start(run: _Run, point: KillPoint | None, crawl: int) -> None:
    """Spawn the next start, as its point asks (a line point: under the tracer); write `process_started`."""
    assert run.drift is not None
    run.drift.before_crawl(crawl)
    index = len(run.starts)
    options = point.start_options(run.design.values(run.launch_for(crawl))) if point is not None else None
    options = under_the_disk_model(options, run.settings.disk, point)
    run.current = spawn(run.design, run.launch_for(crawl), index, run.settings.workers, options, run.launcher)
    run.current.restart_prefix = run.settings.disk.strace_prefix() if run.settings.disk is not None else ()
    run.starts.append(run.current)
    run.history.add("process_started", run.current.started - run.began, start=index, pid=run.current.pids[0],
                    pids=run.current.pids, crawl=crawl, door=run.current.door)


def _wait_then_kill(run: _Run, point: KillPoint | None, armed: Armed, crawl: int) -> bool:
    """Wait for the point (its delay, or the start's end), then record what happened."""
    current = run.current
    assert current is not None
    index = current.index
    wait_s = point.wait_s if point is not None else None
    remaining_s = max(0.0, run.deadline - time.monotonic())
    store_file = run.location if kind_of(run.design.store.kind).server is None else None
    log = run.site.request_log
    watch = StartWatch(current, lambda: log.crawl_total, store_file, run.settings.no_progress_s, run.on_progress,
                       lambda: log.held_until(current.door))
    # Waiting for a CPU moves the deadline (start_watch.py); a kill point's own delay stays wall-clock time.
    stretch_s = run.cpu.stretch_s() if wait_s is None or remaining_s < wait_s else 0.0
    try:
        try:
            returncode = wait_watching(current, remaining_s if wait_s is None else min(wait_s, remaining_s), watch,
                                       stretch_s)
        finally:
            run.deadline += run.cpu.take(watch)
    except (Stalled, subprocess.TimeoutExpired) as stop:
        if isinstance(stop, Stalled) or wait_s is None or time.monotonic() >= run.deadline:
            returncode = current.kill()  # stuck, or out of time: the run ends here
            run.history.add("time_limit", run.since_began(), start=index, returncode=returncode,
                            held_leases=run.held_leases(),
                            **watch.stop_fields(stop))
            run.outcome = "timed_out"
            return False
        assert point is not None
        _fire(run, point, crawl)
        return True
    current.reap()
    if point is not None and returncode == -signal.SIGKILL:
        # An exact point fired: the site's trigger or the tracer inside the scraper sent the signal.
        fired_at = armed.fired_at or time.monotonic()
        run.history.add("kill", fired_at - run.began, start=index, signal="SIGKILL", point=point.spec,
                        returncode=returncode, held_leases=run.held_leases(),
                        **store_state(run.design, run.location),  # the crash state the kill reached
                        **gate_missed(run.design.values(run.launch_for(crawl))))  # a write gate's kill off its aim
        point.after_kill(StartTarget(run, crawl, point.spec))  # a power cut drops what was not durable
        run.restarts.killed(current.alive_s)
        run.current = None
        return True
    return _exited(run, current, returncode, crawl)


def _fire(run: _Run, point: KillPoint, crawl: int) -> None:
    """The point's wait ran out: it acts (kill, redeploy, one worker, the store's server, a pause); record it."""
    assert run.current is not None
    index = run.current.index
    killed_at = time.monotonic()
    fired = point.fire(StartTarget(run, crawl, point.spec))
    # One worker killed and started again: its killed process, which the site credits requests to.
    alone = {"worker_pid": run.current.retired[-1].process.pid} if fired.restarted_pid is not None else {}
    if fired.killed:  # a pause kills nothing: its target wrote `paused` and `resumed`
        state = store_state(run.design, run.location) if fired.start_over else {}  # the crash state it reached
        run.history.add("kill", killed_at - run.began, start=index, signal=fired.signal, point=point.spec,
                        returncode=fired.returncode, held_leases=run.held_leases(), **state, **fired.fields, **alone)
    if fired.restarted_pid is not None:
        run.history.add("worker_restarted", run.since_began(), start=index, worker=point.worker,
                        pid=fired.restarted_pid)
    if fired.start_over:
        if fired.killed:
            point.after_kill(StartTarget(run, crawl, point.spec))  # a power cut drops what was not durable
            run.restarts.killed(run.current.alive_s)
        run.current = None


def _exited(run: _Run, current: Start, returncode: int, crawl: int) -> bool:
    """The start ended by itself: a finished crawl, or a crash no restart should paper over."""
    # What the store still held claimed when the crawl said it was done: leases nobody will finish.
    run.history.add("process_exited", run.since_began(), start=current.index, returncode=returncode,
                    held_leases=run.held_leases())
    failed = next((w for w in current.workers if w.process.returncode), None)
    run.current = None
    if failed is not None:
        run.outcome = "crashed"
        run.history.add("crash", run.since_began(), start=current.index, returncode=returncode, pid=failed.process.pid,
                        **collect.crash_said(failed.stderr_path, run.site), workers=len(current.workers))
        return False
    run.crawl_done = crawl  # the crawl ended by itself; the next planned crawl, if any, starts afresh
    assert run.drift is not None
    run.drift.cancel_timer()  # a change "during the killed crawl" must not land after it
    return True


def _collect(run: _Run) -> History:
    """Phase 3: everything the run left, read into the history, then `run_finished`."""
    ended = time.monotonic()
    history, design = run.history, run.design
    collect.add_requests(history, run.site, run.starts, run.began)
    collect.add_scraper_events(history, run.starts, run.began, run.site)
    collect.add_start_output(history, run.starts, run.began, run.site)
    collect.add_store_records(history, design, run.location, run.wall_clock_at_start, ended - run.began, run.site)
    collect.add_side_effects(history, design, run.launch, run.location, run.site, run.began, ended - run.began)
    # The time the scrapers ran; the rest of the run's wall time is the harness's own (harness/running/phase_clock.py).
    scraper_s = sum(min(start.alive_s, ended - start.started) for start in run.starts)
    history.add("run_finished", ended - run.began, outcome=run.outcome, wall_s=round(ended - run.began, 4),
                scraper_s=round(scraper_s, 4), store_found=collect.store_found(design, run.location),
                cpu_wait_s=round(run.cpu.waited_s, 1))
    first_crash = (history := history.sorted()).first("crash")
    if first_crash is not None and first_crash["start"] == 0 and not history.of_type("request"):
        raise ScraperStartError(f"design {design.name!r} exited with status {first_crash['returncode']} before"
                                f" its first request: {complaint(first_crash['stderr_tail'] or ['(no output)'])}")
    collect.refuse_a_store_never_created(design, run.location, history, run.outcome, run.site)
    return history
