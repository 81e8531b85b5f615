"""The one orchestrator (Jepsen's `run!`): every command's runs go through the same named phases.

Phases, in the order they nest:
1. `site_phase`: the fixture site, with its latency, pace and slow pages (killtest.fixture_site.server);
2. `store_servers_phase`: the private PostgreSQL/Redis servers the designs' stores need and their specs
   declare (`[servers]`), a fresh database for every run (killtest.harness.servers.for_stores);
3. `prefork_phase`: one pre-forked launcher per Python design when asked (killtest.harness.running.prefork);
   `stage` nests these three: the setup every plan shares;
4. `run_phase`: one kill-test run of one design on one schedule, in a temporary work directory
   (killtest.harness.running.runner.run_kill_test), giving its history;
5. `check_phase`: the history checked against the catalog (killtest.harness.check.checker.check_run);
6. `results_phase`: the campaign's result files, rewritten after every run and once at the end
   (killtest.harness.report.writer).

The plans that go through them: `run_campaign` (run, replay, scale, calibrate, bench) below,
`explore_design` (killtest.harness.campaigns.exploration), `run_zoo` (killtest.harness.campaigns.zoo_runs).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from killtest.fixture_site.catalog import Catalog
from killtest.fixture_site.recordings.recorded_site import RecordedSite
from killtest.fixture_site.server import SiteServer
from killtest.harness import lifeline
from killtest.harness.check.baseline import compare
from killtest.harness.check.checker import check_run
from killtest.harness.check.compare import compare_designs, per_run_wins
from killtest.harness.check.health import health_warning
from killtest.harness.check.kill_phases import STORED
from killtest.harness.check.verdict import RunVerdict
from killtest.harness.design.model import Design
from killtest.harness.faults.disk_model import DiskModel, adopt_orphans
from killtest.harness.faults.schedule import KillSchedule
from killtest.harness.history import History
from killtest.harness.report.campaign import Campaign
from killtest.harness.report.start_pace import terminal_lines
from killtest.harness.report.writer import history_dir, history_path, write_json, write_results
from killtest.harness.running.campaign_plan import CampaignPlan
from killtest.harness.running.phase_clock import PhaseClock
from killtest.harness.running.prefork import Zygote
from killtest.harness.running.progress import Progress
from killtest.harness.running.recorded import refuse_drift, replaying, site_catalog, through_the_proxy
from killtest.harness.running.runner import RunSettings, run_kill_test
from killtest.harness.servers.for_stores import StoreServers

__all__ = ["Stage", "check_phase", "prefork_phase", "results_phase", "run_campaign", "run_phase",
           "site_phase", "stage", "store_servers_phase"]


@contextlib.contextmanager
def site_phase(catalog: Catalog, latency_s: float = 0.0, slow_pages: Sequence[tuple[str, float]] = (),
               pace_rps: float = 0.0) -> Iterator[SiteServer]:
    """Phase 1: the fixture site serving `catalog` (or replaying a recorded site), stopped when the block ends."""
    if isinstance(catalog, RecordedSite):
        with replaying(catalog, latency_s=latency_s, slow_paths=dict(slow_pages), pace_rps=pace_rps) as replay:
            yield replay
        return
    with SiteServer(catalog, latency_s=latency_s, slow_paths=dict(slow_pages), pace_rps=pace_rps) as site:
        yield site


@contextlib.contextmanager
def store_servers_phase(designs: Sequence[Design], disk: DiskModel | None = None) -> Iterator[StoreServers]:
    """Phase 2: the servers the designs' stores need and their specs declare, stopped when the block ends;
    under the disk model's strace when there is one, so a commit of theirs costs what the model says."""
    if disk is not None:
        adopt_orphans()  # a server killed with its strace leaves orphans the harness must reap
    with StoreServers(designs, disk.strace_prefix() if disk is not None else ()) as servers:
        yield servers


@contextlib.contextmanager
def prefork_phase(designs: Sequence[Design], enabled: bool) -> Iterator[dict[str, Zygote]]:
    """Phase 3: a pre-forked launcher per Python design, by name; none when not `enabled`."""
    with contextlib.ExitStack() as stack:
        # Only a Python design can be pre-forked; any other program starts afresh every time.
        yield {d.name: stack.enter_context(Zygote(d)) for d in designs if enabled and d.module is not None}


@dataclass
class Stage:
    """What phases 1-3 set up: the site, the store servers and the launchers, for phase 4 to use."""

    site: SiteServer
    servers: StoreServers
    launchers: dict[str, Zygote] = field(default_factory=dict)


@contextlib.contextmanager
def stage(catalog: Catalog, designs: Sequence[Design], *, latency_s: float = 0.0,
          slow_pages: Sequence[tuple[str, float]] = (), pace_rps: float = 0.0,
          prefork: bool = False, disk: DiskModel | None = None) -> Iterator[Stage]:
    """Phases 1-3 nested: the site, the store servers, the pre-forked launchers; all stopped at the end."""
    lifeline.ensure_watchdog()  # first: if the harness is SIGKILLed from here on, nothing it started outlives it
    catalog = site_catalog(designs, catalog)  # a recorded site when the designs' specs name one
    prefork = prefork and not isinstance(catalog, RecordedSite)  # a forked start would miss the proxy's variables
    with site_phase(catalog, latency_s, slow_pages, pace_rps) as site, store_servers_phase(designs, disk) as servers, \
            prefork_phase(designs, prefork) as launchers:
        yield Stage(site, servers, launchers)


def run_phase(on: Stage, design: Design, schedule: KillSchedule, settings: RunSettings, *,
              work_dir: str | None = None, prefix: str = "killtest-",
              on_progress: Callable[[str], None] = lambda message: None) -> History:
    """Phase 4: one run of `design` on `schedule`, in a fresh temporary directory and a fresh database on every
    server it keeps state in."""
    refuse_drift(on.site, settings.drift)
    design = through_the_proxy(design, on.site)  # a recorded site: the proxy and its CA in the environment
    with lifeline.temp_dir(prefix=prefix, dir=work_dir) as scratch:
        return run_kill_test(design, schedule, on.site, scratch, settings, on_progress=on_progress,
                             launcher=on.launchers.get(design.name), dsn=on.servers.dsn_for(design),
                             restart_store=on.servers.restarter_for(design), servers=on.servers.urls_for(design))


def check_phase(design, run: int, history: History, catalog: Catalog) -> RunVerdict:
    """Phase 5: the run's history held to the design's promises (a pure function of history and catalog)."""
    return check_run(design, run, history, catalog)


def results_phase(campaign: Campaign, plan: CampaignPlan, *, final: bool = False) -> None:
    """Phase 6: the result files; after each run without plots, at the end with them."""
    if final:
        write_results(campaign, plan.out_dir, plan.name, plot=plan.plot, all_timelines=plan.all_timelines,
                      page=plan.page)
    else:
        write_results(campaign, plan.out_dir, plan.name, plot=False, page=plan.page)


def run_campaign(plan: CampaignPlan, progress: Progress) -> Campaign:
    """Every run of every design on the plan's schedules; results are rewritten after each run."""
    campaign = Campaign(command=plan.command, settings=plan.describe(),
                        controls=[design.name for design in plan.designs if design.control])
    runs = len(plan.schedules)
    clock = PhaseClock()
    os.makedirs(history_dir(plan.out_dir), exist_ok=True)
    try:
        with stage(plan.catalog, plan.designs, latency_s=plan.latency_s, slow_pages=plan.slow_pages,
                   pace_rps=plan.pace_rps, prefork=plan.prefork, disk=plan.settings.disk) as on:
            clock.lap("setup_s")
            for run, schedule in enumerate(plan.schedules, start=1):
                for design in plan.designs:
                    label = f"[{design.name} run {run}/{runs} " + (
                        f"seed {schedule.seed}]" if schedule.seed is not None else f"schedule {schedule.spec}]")
                    on.site.set_toxics(plan.toxics, plan.toxic_seed + run - 1)  # the dice start afresh for every design
                    history = run_phase(on, design, schedule, plan.settings, work_dir=plan.work_dir,
                                        on_progress=_labelled(progress, label))
                    clock.lap("runs_s")
                    history.write_jsonl(history_path(plan.out_dir, plan.name, design.name, run))
                    _record(campaign, plan, design, run, check_phase(design, run, history, on.site.catalog), label,
                            progress)
                    results_phase(campaign, plan)
                    clock.lap("checks_s")
        clock.lap("teardown_s")
        _compare(campaign, plan)
        campaign.complete = True
    except KeyboardInterrupt:
        campaign.interrupted, campaign.stopped_by = True, "interrupted"
        raise
    except BaseException as error:
        campaign.stopped_by = f"{type(error).__name__}: {error}".splitlines()[0]
        raise
    finally:
        # Whatever stopped the campaign, the runs that finished are kept, whole.
        results_phase(campaign, plan, final=True)
        clock.lap("finish_s")
        campaign.timing = clock.totals
        write_json(campaign, plan.out_dir, plan.name)  # again, now with the final timing
    return campaign


def _labelled(progress: Progress, label: str) -> Callable[[str], None]:
    return lambda message: progress.step(f"{label} {message}")


def _record(campaign: Campaign, plan: CampaignPlan, design: Design, run: int, verdict: RunVerdict, label: str,
            progress: Progress) -> None:
    """A checked run joins the campaign, with its line on stderr and any health warning."""
    campaign.verdicts.append(verdict)
    progress.done(_one_line(label, verdict))
    for line in terminal_lines(verdict):  # a stopped or stalled start's pace and own last words
        progress.done(line)
    warning = health_warning(design.name, run, verdict, plan.health_threshold, plan.catalog.full_crawl_requests,
                             len(plan.catalog.products), design.does_not_promise)
    if warning:
        campaign.health_warnings.append(warning)
        progress.done(warning)


def _compare(campaign: Campaign, plan: CampaignPlan) -> None:
    """What only the whole campaign shows: designs against each other, and against a saved baseline."""
    designs_by_name = {d.name: d for d in plan.designs}
    campaign.comparison_figures = per_run_wins(campaign.verdicts, designs_by_name)
    if plan.check_faster:
        campaign.comparison_problems = compare_designs(campaign.verdicts, designs_by_name)
    if plan.baseline_runs:
        campaign.baseline_diffs = compare(list(plan.baseline_runs), [v.to_json() for v in campaign.verdicts],
                                          {d.name: d.claims_idempotence for d in plan.designs}, plan.thresholds)


def _one_line(label: str, v: RunVerdict) -> str:
    status = "ok" if v.valid else "FAIL: " + "; ".join(v.problems)
    return (f"{label} rows {v.rows} ({v.duplicate_ratio:.2f}/product), correct {v.correct_records},"
            f" missing {v.missing_records}"
            f"{f', not stored {v.not_stored_unfinished} (the crawl did not finish)' if v.not_stored_unfinished else ''}"
            f", requests {v.requests}"
            f"{'' if v.requests_per_record is None else f' ({v.requests_per_record:g}/record)'},"
            f" kills {v.kills}/{v.kills_planned}{_waiting(v)}{_storing(v)}, wall {v.wall_s:.2f}s: {status}")


def _storing(v: RunVerdict) -> str:
    """` (1 of 4 killed after storing records)`: the crash states the kills reached (harness/check/kill_phases.py)."""
    stored = sum(start["phase"] == STORED for start in v.killed_starts)
    return f" ({stored} of {len(v.killed_starts)} killed after storing records)" if v.killed_starts else ""


def _waiting(v: RunVerdict) -> str:
    """` (3 while waiting)`: kills that landed on a start past its measured start-up before its first request."""
    return f" ({v.kills_while_waiting} while waiting)" if v.kills_while_waiting else ""
