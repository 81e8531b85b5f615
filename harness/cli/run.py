"""`killtest run`: kill-test one or more designs on the same seeded schedules."""

from __future__ import annotations

import argparse
import dataclasses
import os

from killtest.harness import defaults
from killtest.harness.check.baseline import diff_table
from killtest.harness.check.distinct import point_ranges
from killtest.harness.cli.ci_output import campaign_cases, publish
from killtest.harness.cli.command import EXIT_CHECK_FAILED, EXIT_PASSED, Command
from killtest.harness.cli.explore import replay_line
from killtest.harness.cli.plans_from_args import first_request_wait, kill_delay, kill_spread, timed_plan
from killtest.harness.cli.shared import designs_named, prepare_dirs
from killtest.harness.design.model import Design
from killtest.harness.report.campaign import Campaign, summarise, verdict_words
from killtest.harness.report.crash_states import terminal_lines as crash_state_lines
from killtest.harness.report.replay_lines import failed_run_replays
from killtest.harness.report.sections import replay_of, runs_line
from killtest.harness.report.start_pace import measured_line
from killtest.harness.report.triage import run_failures
from killtest.harness.report.writer import kinds_written
from killtest.harness.running.orchestrator import run_campaign
from killtest.harness.running.pace import MeasuredPace, measure_pace, needs_measuring
from killtest.harness.running.progress import Progress


class RunCommand(Command):
    name = "run"
    help = "kill-test one or more designs on the same seeded schedules"

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        designs, campaign = run_designs(args, progress)
        for figure in campaign.comparison_figures:
            progress.done(figure)
        for problem in campaign.comparison_problems:
            progress.done(f"FAIL: {problem}")
        if campaign.baseline_diffs:
            print_baseline(campaign, args.baseline, progress)
        print_band(campaign, designs, progress)
        print_pace(campaign, progress)
        for said in crash_state_lines(campaign.verdicts):  # where the kills landed, and what they could not find
            progress.done(said)
        publish(args, "run", campaign_cases(campaign, "run"), os.path.join(args.out, f"{args.name}.md"))
        replays = campaign.settings.get("replays") or {}
        failures = run_failures(campaign.verdicts)
        for number, failure in enumerate(failures, 1):  # each distinct failure once, with its first run's replay
            example = failure.example
            progress.done(f"failure {number} of {len(failures)}: {failure.place}: {'; '.join(example.problems)}")
            progress.done(f"  {len(failure.points)} run(s): {point_ranges(b.point for b in failure.points)}")
            if line := replay_of(replays, failure.place, int(example.point[3:])):
                run = next(v for v in campaign.verdicts if v.design == failure.place and f"run{v.run}" == example.point)
                for what, said in failed_run_replays(line, run):  # --expect its findings; exact where it landed
                    kind = "" if what == "replay" else f" ({what})"  # an exact schedule's one line needs no label
                    progress.done(f"replay {failure.place} run {example.point[3:]}{kind}: {said}")
        progress.done(f"run: {runs_line(campaign)}")
        kinds = ",".join(kinds_written(not args.no_plot))
        progress.done(f"results: {os.path.join(args.out, args.name)}.{{{kinds}}} — {verdict_words(campaign)}")
        return EXIT_PASSED if campaign.valid else EXIT_CHECK_FAILED


def run_designs(args: argparse.Namespace, progress: Progress) -> tuple[list[Design], Campaign]:
    """What `run` runs, without the printing: the designs and their campaign (killtest.api.run calls it too)."""
    designs = designs_named(args.design)
    prepare_dirs(args)
    measured = with_measured_pace(args, designs, progress)
    plan = timed_plan(args, designs, args.pace, args.name)
    if measured is not None:  # a start alive past the measured start-up without a request is waiting, at work
        plan = dataclasses.replace(plan, measured_pace=measured.to_json(),
                                   settings=dataclasses.replace(plan.settings, startup_s=measured.startup_s))
    # A replay line for every run, shown beside each failed one (the same schedule, settings and site).
    plan = dataclasses.replace(plan, page=True, replays=tuple(
        (design.name, tuple(replay_line(args, design, schedule.spec, given=given, strict=False)
                            for schedule in plan.schedules))
        for design, given in zip(designs, args.design)))
    return designs, run_campaign(plan, progress)


def with_measured_pace(args: argparse.Namespace, designs: list[Design], progress: Progress) -> MeasuredPace | None:
    """Fill in --kill-delay and --time-limit: as given, exactly; for a user's design on timed kills, measured from
    one unkilled start (harness/running/pace.py); else the article's defaults, which the built-in designs keep."""
    given_delay = kill_delay(args.kill_delay) if args.kill_delay is not None else None
    measured = None
    if needs_measuring(designs, args.design, args.schedule is None, given_delay is not None,
                       args.time_limit is not None):
        args.kill_delay = args.kill_delay or f"{defaults.KILL_DELAY[0]},{defaults.KILL_DELAY[1]}"
        provisional = timed_plan(argparse.Namespace(**{**vars(args), "time_limit": args.time_limit
                                                       or defaults.TIME_LIMIT_S}), designs, args.pace, args.name)
        measured = measure_pace(provisional, given_delay, args.time_limit, progress.done,
                                first_request_wait(args.kill_delay) if given_delay is not None else None,
                                kill_spread(args.kill_delay) if given_delay is not None else False)
        args.time_limit = measured.time_limit_s
        args.kill_delay = measured.kill_delay_option  # `f` points from each start's first request, when measured
    args.kill_delay = args.kill_delay or f"{defaults.KILL_DELAY[0]},{defaults.KILL_DELAY[1]}"
    args.time_limit = args.time_limit or defaults.TIME_LIMIT_S
    return measured


def print_pace(campaign: Campaign, progress: Progress) -> None:
    """The measured figures the runs used, again at the end; and, when kills landed before work, the start-up
    they missed and the option to change."""
    measured = campaign.settings.get("measured_pace")
    if measured:
        progress.done(measured_line(measured))
    late = sum(v.kills_not_delivered for v in campaign.verdicts if not v.kills)
    if measured and late:  # a start-up measured on a busier machine: the crawl ended before the first kill
        progress.done(f"{late} kills came after the crawl had finished, in runs where none landed (start-up measured"
                      f" {measured['startup_s']:g}s, crawl {measured['crawl_s']:g}s): pin an earlier --kill-delay")
    elif measured and measured.get("spread") and (after := sum(v.kills_not_delivered for v in campaign.verdicts)):
        planned = sum(v.kills_planned for v in campaign.verdicts)
        progress.done(f"{after} of {planned} kills came after the crawl had finished: spread over the whole work, a"
                      " kill later than what a resumed crawl had left to do never lands (more --runs land more)")
    before = sum(v.kills_before_work for v in campaign.verdicts)
    if before:
        planned = sum(v.kills_planned for v in campaign.verdicts)
        startups = sorted(v.startup_s for v in campaign.verdicts if v.startup_s is not None)
        runs = f"a median {startups[len(startups) // 2]:g}s in these runs" if startups else "none in these runs"
        then = f", {measured['startup_s']:g}s measured before them" if measured else ""
        low, high = campaign.settings.get("kill_delay_s") or defaults.KILL_DELAY
        progress.done(f"{before} of {planned} kills landed before work (before the start's first request: start-up"
                      f" {runs}{then}); the kills came {low:g}-{high:g}s after each start: give --kill-delay LOW,HIGH"
                      " past the start-up")


def print_baseline(campaign: Campaign, path: str, progress: Progress) -> None:
    """The side-by-side diff against the baseline, as an aligned table on stderr."""
    rows = [["design", "figure", "baseline", "this run", "verdict"]] + diff_table(campaign.baseline_diffs)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    progress.done(f"against the baseline {path}:")
    for row in rows:
        progress.done("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    for regression in campaign.regressions:
        progress.done(f"REGRESSION: {regression}")


def print_band(campaign: Campaign, designs: list[Design], progress: Progress) -> None:
    """Where each control's rows per product fall against the article's band (its naive figures)."""
    summary = summarise(campaign)
    for control in (design.name for design in designs if design.control):
        figures = summary.get(control, {})
        if "band_gap" not in figures:
            continue
        gap = figures["band_gap"]
        progress.done(f"{control} rows per product {gap['ours'][0]:.2f}–{gap['ours'][1]:.2f} against the published"
                      f" {gap['published'][0]}–{gap['published'][1]}: lowest run {gap['lowest_below_band_by']:.2f}"
                      f" below, highest {gap['highest_above_band_by']:.2f} above"
                      f" (start-up {figures['median_startup_s']}s, {figures['median_request_rate']} requests/s)")
