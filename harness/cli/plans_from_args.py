"""From parsed options to a CampaignPlan: the settings, site faults and schedules `run`, `scale`,
`calibrate` and `replay` share, each refused in one line before anything starts."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from collections.abc import Callable, Iterable

from killtest.fixture_site.catalog import Drift, build_catalog, parse_drift
from killtest.fixture_site.toxics import Toxics, ToxicSpecError, parse_toxics
from killtest.harness import defaults
from killtest.harness.check.baseline import Thresholds
from killtest.harness.cli.shared import command_line
from killtest.harness.design.model import Design
from killtest.harness.errors import KilltestError
from killtest.harness.faults.disk_model import disk_model
from killtest.harness.faults.points.store_write import server_store
from killtest.harness.faults.schedule import (
    KillSchedule,
    parse_schedule,
    run_seeds,
    timed_schedule,
    validate_schedule,
)
from killtest.harness.option_kinds import RestartDelay
from killtest.harness.report.baseline_file import load_baseline
from killtest.harness.running.campaign_plan import CampaignPlan
from killtest.harness.running.orchestrator import stage
from killtest.harness.running.runner import RunSettings
from killtest.harness.running.write_plans import needs_recording, resolve_schedule


def timed_plan(args: argparse.Namespace, designs: list[Design], pace_rps: float, name: str) -> CampaignPlan:
    """The plan of `run`, `scale` and `calibrate`: seeded timed schedules, or one exact schedule repeated."""
    check_recrawls(args, designs)
    delay_range, wait = kill_delay(args.kill_delay), first_request_wait(args.kill_delay)
    exact = getattr(args, "schedule", None)
    if exact is not None:
        schedules = (parse_schedule(exact),) * args.runs  # exact points: every run repeats the same one
    else:
        spread = wait is not None and kill_spread(args.kill_delay)
        schedules = tuple(timed_schedule(seed, args.kills, *delay_range, first_request_wait_s=wait, spread=spread)
                          for seed in run_seeds(args.seed, args.runs))
    check_points(args, schedules, designs)
    refuse_killless(schedules, "--kills 0" if exact is None else f"--schedule {exact!r}")
    return aim_store_writes(CampaignPlan(command=typed_command(args), designs=tuple(designs), schedules=schedules,
                        catalog=build_catalog(args.listing_pages, args.per_page),
                        settings=run_settings(args, getattr(args, "lease", defaults.LEASE)),
                        out_dir=args.out, name=name, latency_s=args.latency, pace_rps=pace_rps,
                        work_dir=args.work_dir,
                        slow_pages=slow_pages(getattr(args, "slow_page", [])),
                        toxics=toxics(args), toxic_seed=getattr(args, "toxic_seed", defaults.TOXIC_SEED),
                        plot=not args.no_plot, all_timelines=args.all_timelines,
                        health_threshold=args.health_threshold, check_faster=getattr(args, "check_faster", False),
                        seed=None if exact is not None else args.seed, kill_delay_s=delay_range,
                        baseline_runs=tuple(load_baseline(args.baseline)) if getattr(args, "baseline", None) else (),
                        thresholds=Thresholds(getattr(args, "max_slowdown", defaults.MAX_SLOWDOWN_PCT),
                                              getattr(args, "max_extra_repeats", defaults.MAX_EXTRA_REPEATS))))


def _step(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def aim_store_writes(plan: CampaignPlan, step: Callable[[str], None] = _step) -> CampaignPlan:
    """The plan with its exact schedule's store-write (`w5`) and `r5+` points aimed (harness/running/write_plans.py).

    A file store's point is aimed by one recording run on the plan's own site and settings (strace counts
    per thread); a PostgreSQL or Redis store's needs none: the start's own proxy counts its statements.
    Every run repeats the one aimed schedule. A file store's write is one design's: one design at a time."""
    schedule: KillSchedule = plan.schedules[0]
    if not any(needs_recording(p) for p in schedule.points):
        return plan
    if all(server_store(design) for design in plan.designs):  # counted by each start's proxy: nothing to aim
        aimed = resolve_schedule(schedule, plan.designs[0], None, plan.settings)  # type: ignore[arg-type]
        return dataclasses.replace(plan, schedules=(aimed,) * len(plan.schedules))
    if len(plan.designs) != 1:
        raise KilltestError(f"--schedule {schedule.spec!r}: store-write and r<n>+ points are aimed at one design's"
                            " writes: give one --design at a time")
    design = plan.designs[0]
    step(f"[{design.name}] recording the store writes to aim {schedule.spec}")
    with stage(plan.catalog, plan.designs, latency_s=plan.latency_s, slow_pages=plan.slow_pages,
               pace_rps=plan.pace_rps) as on:
        on.site.set_toxics(plan.toxics, plan.toxic_seed)
        aimed = resolve_schedule(schedule, design, on, plan.settings, work_dir=plan.work_dir)
    return dataclasses.replace(plan, schedules=(aimed,) * len(plan.schedules))


def typed_command(args: argparse.Namespace) -> str:
    """The command the result files record: as typed, or, for a call of the public API (killtest.api),
    the equivalent command line it parsed (`args.argv`)."""
    argv = getattr(args, "argv", None)
    return shlex.join(["killtest", *argv]) if argv is not None else command_line()


def refuse_killless(schedules: Iterable[KillSchedule], given: str) -> None:
    """A run without a kill proves nothing, so a campaign of them is refused before anything starts."""
    if any(not schedule.points for schedule in schedules):
        raise KilltestError(f"{given} plans no kill, and a run without a kill proves nothing: give --kills 1 or"
                            " more, or a --schedule with at least one kill point")


def replay_plan(args: argparse.Namespace, designs: list[Design], schedule: KillSchedule) -> CampaignPlan:
    """The plan of `replay`: one run of each design on one exact schedule, on the small catalog."""
    refuse_killless([schedule], f"--schedule {schedule.spec!r}")
    return CampaignPlan(command=typed_command(args), designs=tuple(designs), schedules=(schedule,),
                        catalog=build_catalog(args.listing_pages, args.per_page),
                        settings=run_settings(args, args.lease), slow_pages=slow_pages(args.slow_page),
                        toxics=toxics(args), toxic_seed=args.toxic_seed,
                        out_dir=args.out, name="replay", work_dir=args.work_dir, plot=False,
                        prefork=not args.no_prefork, latency_s=args.latency, pace_rps=args.pace)


def run_settings(args: argparse.Namespace, lease_s: float) -> RunSettings:
    return RunSettings(lease_s=lease_s, time_limit_s=args.time_limit,
                       recrawls=getattr(args, "recrawls", defaults.RECRAWLS),
                       workers=getattr(args, "workers", defaults.WORKERS), drift=drift(args),
                       drift_during_s=getattr(args, "drift_during", None),
                       # --no-progress-timeout is the lead's to add to harness/options.py; until then, the default.
                       no_progress_s=getattr(args, "no_progress_timeout", defaults.NO_PROGRESS_S),
                       aim_pauses=getattr(args, "aim_pauses", False),
                       restart_delay=getattr(args, "restart_delay", RestartDelay()),  # scale's and calibrate's: 0
                       disk=disk_model(getattr(args, "disk", None), getattr(args, "fsync_latency", None)))


def kill_delay(text: str) -> tuple[float, float]:
    """--kill-delay's LOW,HIGH: seconds after each start's spawn (`0.2,1.0`), or after its first request
    (`f0.2,1.0:7.8`, waited for 7.8 s after the spawn: the `f` points a measured design's kills use)."""
    return _kill_delay_parts(text)[0]


def first_request_wait(text: str) -> float | None:
    """How long an `f` --kill-delay waits for each start's first request; None for delays after the spawn."""
    return _kill_delay_parts(text)[1]


def kill_spread(text: str) -> bool:
    """`f0.2~5.3:8`: the kills spread over the range (timed_schedule's `spread`), not drawn uniformly in it."""
    return _kill_delay_parts(text)[2]


def _kill_delay_parts(text: str) -> tuple[tuple[float, float], float | None, bool]:
    """(LOW, HIGH), the first-request wait (None: after the spawn) and whether the kills are spread."""
    delays, wait, spread = text, None, False
    try:
        if text.startswith("f"):
            delays, colon, wait_text = text[1:].partition(":")
            wait = float(wait_text) if colon else defaults.FIRST_REQUEST_WAIT_S
            if not wait > 0:
                raise ValueError(text)
            spread = "~" in delays
        low, high = (float(part) for part in delays.split("~" if spread else ","))
    except ValueError:
        raise KilltestError(f"--kill-delay takes LOW,HIGH in seconds after each start, for example 0.2,1.0, or"
                            f" fLOW,HIGH[:WAIT] after its first request, for example f0.2,1.0:8, or fLOW~HIGH[:WAIT]"
                            f" spread over that range, for example f0.2~6:8, not {text!r}") from None
    return (low, high), wait, spread


def drift(args: argparse.Namespace) -> Drift | None:
    text = getattr(args, "drift", None)
    if text is None:
        if getattr(args, "drift_during", None) is not None:
            raise KilltestError("--drift-during needs --drift SPEC, for example --drift changed=0.1")
        return None
    try:
        found = parse_drift(text, args.drift_seed)
    except ValueError as error:
        raise KilltestError(f"--drift: {error}") from None
    if not getattr(args, "recrawls", 0) and getattr(args, "drift_during", None) is None:
        raise KilltestError("--drift changes the site before each re-crawl (--recrawls N) or once during the killed"
                            " crawl (--drift-during SECONDS): give one of them")
    return found


def toxics(args: argparse.Namespace) -> Toxics | None:
    text = getattr(args, "toxics", None)
    if text is None:
        return None
    try:
        return parse_toxics(text)
    except ToxicSpecError as error:
        raise KilltestError(f"--toxics: {error}") from None


def slow_pages(texts: list[str]) -> tuple[tuple[str, float], ...]:
    pages = []
    for text in texts:
        path, _, seconds = text.partition("=")
        try:
            delay = float(seconds)
        except ValueError:
            delay = -1.0
        if not path.startswith("/") or delay < 0:
            raise KilltestError(f"--slow-page takes PATH=SECONDS, for example /product/1=0.6, not {text!r}")
        pages.append((path, delay))
    return tuple(pages)


def check_points(args: argparse.Namespace, schedules: Iterable[KillSchedule], designs: list[Design]) -> None:
    """Each kill point applies to every design with the workers given, or a one-line error (the point's kind says)."""
    for schedule in schedules:
        validate_schedule(schedule, designs, getattr(args, "workers", defaults.WORKERS))


def check_recrawls(args: argparse.Namespace, designs: list[Design]) -> None:
    for design in designs:
        if getattr(args, "recrawls", 0) and not design.can_recrawl:
            raise KilltestError(f"--recrawls: design {design.name!r} does not take {{crawl}} in its command, so it"
                                " cannot be told that a crawl is a re-crawl")
