"""`killtest fuzz`: Hypothesis over kill schedules of every kind; a failure shrinks to one replay line."""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import TYPE_CHECKING

from killtest.harness.campaigns.exploration import refuse_power_cut
from killtest.harness.campaigns.parallel import default_jobs
from killtest.harness.cli.ci_output import fuzz_cases, publish
from killtest.harness.cli.command import EXIT_CHECK_FAILED, EXIT_PASSED, Command
from killtest.harness.cli.explore import add_short_flag, replay_line
from killtest.harness.cli.plans_from_args import typed_command
from killtest.harness.cli.shared import prepare_dirs
from killtest.harness.design.model import Design
from killtest.harness.design.registry import design_named
from killtest.harness.errors import KilltestError
from killtest.harness.files import write_atomically
from killtest.harness.report.triage import (
    failure_lines,
    failures_json,
    failures_markdown,
    fuzz_locating_words,
    trial_failures,
)
from killtest.harness.report.triage_page import failure_view, triage_page
from killtest.harness.running.progress import Progress
from killtest.harness.running.runner import RunSettings

if TYPE_CHECKING:  # Hypothesis is imported only when fuzz runs
    from killtest.harness.campaigns.fuzzing import FuzzResult


class FuzzCommand(Command):
    name = "fuzz"
    help = "search kill schedules of every kind with Hypothesis; shrink a failure to one replay line"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        add_short_flag(parser, "--jobs", "-j")

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        design, result, replay, base = fuzz_from_args(args, progress)
        by_broken = lambda broken: trial_replay(args, design, result.trials[broken.order])  # noqa: E731
        failures = trial_failures(result.trials)
        publish(args, "fuzz", fuzz_cases(result, replay, by_broken, failures), f"{base}.md", result.elapsed_s)
        failed = [t for t in result.trials if t.problems]
        for line in failure_lines(failures, by_broken, "schedule"):
            progress.done(line)
        progress.done(f"fuzz {design.name}: {len(result.trials)} schedules, {len(failed)} broke a promise,"
                      f" {len(failures)} distinct failure{'s' if len(failures) != 1 else ''},"
                      f" {result.shrink_runs} shrink runs, {result.schedules_per_minute} schedules/minute;"
                      f" {base}.{{json,md,html}}")
        if located := fuzz_locating_words(result):
            progress.done(located)
        if result.shrunk is None:
            return EXIT_PASSED
        exact = "" if result.shrunk.exact else " (not exact: it may not repeat)"
        progress.done(f"smallest failing schedule{exact}: {result.shrunk.case.schedule} on"
                      f" {_catalog(result.shrunk.case)}:"
                      f" {'; '.join(result.shrunk.problems)}")
        progress.done(f"replay it: {replay}")
        return EXIT_CHECK_FAILED


def fuzz_from_args(args: argparse.Namespace, progress: Progress) -> tuple[Design, FuzzResult, str | None, str]:
    """What `fuzz` runs, without the printing: the design, the search's result, the replay line of the
    smallest failing schedule (None: none failed) and the base path of the result files it wrote
    (killtest.api.fuzz calls it too)."""
    try:
        from killtest.harness.campaigns import fuzz_database as db  # Hypothesis, imported only by this command
        from killtest.harness.campaigns.fuzz_plan import fuzz_design
    except ImportError as error:
        raise KilltestError(f"killtest fuzz needs Hypothesis ({error.name} is not installed):"
                            " pip install 'hypothesis>=6.80'") from None
    design = design_named(args.design)
    if args.power_cut:
        refuse_power_cut(design, "fuzz", needs_strace=False)  # before any directory is made
    prepare_dirs(args)
    settings = RunSettings(lease_s=args.lease, time_limit_s=args.time_limit, restart_delay=args.restart_delay)
    # By the spec's promises; --strict: every idempotence promise, as fuzz always judged (replay lines say so).
    judged = design.strict() if args.strict else design
    # The failures saved by earlier fuzzes of this very design run first; one that still fails is the
    # verdict, without a search (harness/campaigns/fuzz_database.py).
    began = time.monotonic()
    database = db.FailureDatabase(args.database or os.path.join(args.out, "fuzz-database"), judged)
    replayed = db.replay_first(database, judged, settings, prefork=not args.no_prefork, work_dir=args.work_dir,
                               power_cut=args.power_cut, on_progress=progress.step)
    result = db.result_of_replays(judged, replayed, time.monotonic() - began) or fuzz_design(
        judged, settings, examples=args.examples, seed=args.seed, max_seconds=args.max_seconds,
        jobs=args.jobs or default_jobs(), prefork=not args.no_prefork, work_dir=args.work_dir,
        on_progress=progress.step, power_cut=args.power_cut)
    saved = db.database_json(database, replayed, db.save_failures(database, result))
    if replayed or saved["new_failures_saved"]:
        progress.step(f"[fuzz {design.name}] failure database {database.dir}: {len(replayed)} replayed"
                      f" ({sum(bool(r.trial.problems) for r in replayed)} still fail),"
                      f" {saved['new_failures_saved']} new saved")
    base = os.path.join(args.out, f"fuzz-{design.name}")
    replay = trial_replay(args, design, result.shrunk) if result.shrunk is not None else None
    failures = trial_failures(result.trials)
    by_broken = lambda broken: trial_replay(args, design, result.trials[broken.order])  # noqa: E731
    write_atomically(f"{base}.json", json.dumps({**result.to_json(), "replay": replay, "database": saved,
                                                 "distinct_failures": len(failures),
                                                 "locate_s": round(sum(t.located_s for t in result.trials), 2),
                                                 "failures": failures_json(failures, by_broken)},
                                                indent=2) + "\n")
    write_atomically(f"{base}.md", markdown(result, typed_command(args), replay,
                                            failures_markdown(failures, by_broken)) + db.database_markdown(saved))
    views = [failure_view(f, by_broken(f.example), result.trials[f.example.order].triage.get("timeline"),
                          result.trials[f.example.order].triage.get("keys"), "schedule") for f in failures]
    kept = len(result.trials) - sum(1 for t in result.trials if t.problems)
    write_atomically(f"{base}.html", triage_page(
        f"killtest fuzz {design.name}", [f"Command: `{typed_command(args)}`",
                                         f"{len(result.trials)} schedules, {len(result.trials) - kept} broke a promise,"
                                         f" {len(failures)} distinct failures.",
                                         *([f"Smallest failing schedule: `{replay}`"] if replay else [])],
        views, [f"{kept} schedule{'s' if kept != 1 else ''} kept every promise."] if kept else [],  # only what passed
        [f"fuzz-{design.name}.json", f"fuzz-{design.name}.md"]))
    return design, result, replay, base


def trial_replay(args: argparse.Namespace, design: Design, trial) -> str:
    """The replay line of one fuzzed case: its schedule on its catalog (none named for a recorded site, whose
    catalog is its recording: replay serves it whatever --listing-pages says)."""
    case = trial.case
    return replay_line(args, design, case.schedule, listing_pages=None if case.recorded else case.pages,
                       per_page=None if case.recorded else case.per_page, expect=trial.triage.get("findings", ()))


def markdown(result, command: str, replay: str | None, distinct: list[str] | None = None) -> str:
    """The fuzz report: the shrunk failure and its replay line first, then every schedule tried."""
    lines = ["# killtest fuzz", "", f"Command: `{command}`", "",
             f"Design **{result.design}**: {len(result.trials)} schedules, {result.shrink_runs} shrink runs,"
             f" {result.schedules_per_minute} schedules a minute ({result.elapsed_s:.1f} s in all).", ""]
    if result.shrunk is not None:
        case = result.shrunk.case
        where = "the recorded site" if case.recorded else f"a catalog of {case.pages} listing pages of {case.per_page}"
        lines += [f"Smallest failing schedule: `{case.schedule}` on {where}:"
                  f" {'; '.join(result.shrunk.problems)}.", "", f"Replay: `{replay}`", ""]
    lines += distinct or []
    lines += ["| catalog | schedule | exact | verdict |", "| --- | --- | --- | --- |"]
    for trial in sorted(result.trials, key=lambda t: not t.problems):
        verdict = "ok" if not trial.problems else "; ".join(trial.problems)
        lines.append(f"| {trial.case.catalog} | `{trial.case.schedule}` |"
                     f" {'yes' if trial.exact else 'no'} | {verdict} |")
    return "\n".join(lines) + "\n"


def _catalog(case) -> str:
    """The catalog a case ran on, in words: `2x3 products`, or `the recorded site`."""
    return "the recorded site" if case.recorded else f"{case.pages}x{case.per_page} products"
