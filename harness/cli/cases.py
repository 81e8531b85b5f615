"""`killtest cases`: real frameworks at pinned releases (scrapers/cases/), each release flagged or clean as expected."""

from __future__ import annotations

import argparse
import os

from killtest.harness.campaigns.case_bisect import bisect_case, summary_lines, template_of
from killtest.harness.campaigns.case_explore import explore_case
from killtest.harness.campaigns.case_plan import ReleaseOutcome, check_requirements
from killtest.harness.campaigns.case_report import flagged_releases, release_facts
from killtest.harness.campaigns.case_runs import run_cases
from killtest.harness.check.findings import FINDINGS
from killtest.harness.cli.command import EXIT_CHECK_FAILED, EXIT_PASSED, Command
from killtest.harness.cli.explore import add_short_flag
from killtest.harness.cli.shared import command_line
from killtest.harness.design.case_spec import load_cases
from killtest.harness.errors import KilltestError
from killtest.harness.report.case_bisect_table import write_bisection
from killtest.harness.report.case_explore_table import write_exploration
from killtest.harness.report.case_frequencies import release_frequencies
from killtest.harness.report.case_report_page import write_report
from killtest.harness.report.case_table import merged, read_results, verdict_text, write_results
from killtest.harness.running.progress import Progress


class CasesCommand(Command):
    name = "cases"
    help = "run the cases: real frameworks at pinned releases, the buggy flagged and the fixed clean"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        add_short_flag(parser, "--jobs", "-j")

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        chosen = [flag for flag in ("bisect", "report", "explore") if getattr(args, flag) is not None]
        if len(chosen) > 1:
            raise KilltestError(f"--{chosen[0]} and --{chosen[1]} are two jobs: give one of them")
        for flag in ("from", "to", "pre", "every"):
            if getattr(args, flag) and chosen != ["bisect"]:
                raise KilltestError(f"--{flag} goes with --bisect CASE")
        if args.jobs is not None and chosen not in ([], ["explore"]):
            raise KilltestError("--jobs goes with the cases' runs or --explore CASE (a bisection and a report run"
                                " one at a time)")
        if args.repeat is not None and chosen:
            raise KilltestError(f"--repeat goes with the cases' runs, not --{chosen[0]} (which runs each release once"
                                " at its aimed points)")
        if args.bisect is not None:
            return self.bisect(args, progress)
        if args.report is not None:
            return self.report(args, progress)
        if args.explore is not None:
            return self.explore(args, progress)
        only = [n.strip() for n in (args.only or "").split(",") if n.strip()]
        if args.only is not None and not only:  # `--only ""` (an unset shell variable) is not "all of them"
            raise KilltestError("--only names no case: give --only NAME[,NAME], or leave --only out to run them all")
        cases = load_cases(only=only, codes=FINDINGS)
        if args.release is not None and not any(args.release in (r.version, r.key) for c in cases for r in c.releases):
            raise KilltestError(f"--release {args.release}: no selected case has that release")
        check_requirements(cases, args.release)  # before the results directory: bad input writes nothing
        try:
            os.makedirs(args.out, exist_ok=True)
        except OSError as error:
            raise KilltestError(f"cannot create the results directory {args.out!r}: {error.strerror}") from None
        outcomes: list[ReleaseOutcome] = []

        def finished(outcome: ReleaseOutcome) -> None:
            outcomes.append(outcome)
            progress.done(_line(outcome))
        try:
            run_cases(cases, args.out, release=args.release, rebuild=args.rebuild, say=progress.step, done=finished,
                      repeat=args.repeat, jobs=args.jobs or 1, aimed_only=args.aimed_only)
        finally:  # an interrupted `cases` keeps the releases that finished
            path = os.path.join(args.out, "cases.json")
            write_results(args.out, merged(read_results(path), cases, outcomes, command_line()))
        wrong = [o for o in outcomes if not o.as_expected]
        for o in outcomes:
            if o.replay:
                progress.done(f"replay {o.case} {o.key}: {o.replay}")
            if o.spread_replay:
                progress.done(f"replay {o.case} {o.key} (spread kills): {o.spread_replay}")
        progress.done(f"cases: {len(outcomes) - len(wrong)} of {len(outcomes)} releases as expected;"
                      f" {os.path.join(args.out, 'cases')}.{{json,md}}")
        return EXIT_CHECK_FAILED if wrong else EXIT_PASSED

    def bisect(self, args: argparse.Namespace, progress: Progress) -> int:
        """`--bisect CASE`: the releases where its verdict changes (campaigns/case_bisect.py)."""
        if args.only is not None or args.release is not None:
            raise KilltestError("--bisect CASE runs one case on the registry's releases:"
                                " leave out --only and --release")
        cases = load_cases(only=[args.bisect], codes=FINDINGS)
        template_of(cases[0])  # a control has nothing to bisect: one line before anything is asked or built
        check_requirements(cases)
        result = bisect_case(cases[0], args.out, first=getattr(args, "from"), last=args.to, pre=args.pre,
                             every=args.every, rebuild=args.rebuild, say=progress.step, command=command_line())
        path = write_bisection(args.out, result.to_json())
        for line in summary_lines(result):
            progress.done(line)
        progress.done(f"bisect {result.case}: {path} and bisect.json")
        return EXIT_PASSED


    def report(self, args: argparse.Namespace, progress: Progress) -> int:
        """`--report CASE`: report.md of each flagged release, from runs of its own (campaigns/case_report.py)."""
        if args.only is not None:
            raise KilltestError("--report CASE names its case: leave out --only")
        cases = load_cases(only=[args.report], codes=FINDINGS)
        releases = flagged_releases(cases[0], args.release)
        check_requirements(cases, args.release)
        for rel in releases:
            facts = release_facts(cases[0], rel, args.out, rebuild=args.rebuild, say=progress.step)
            progress.done(f"report {cases[0].name} {rel.key}: {write_report(args.out, facts)}")
        return EXIT_PASSED


    def explore(self, args: argparse.Namespace, progress: Progress) -> int:
        """`--explore CASE`: every store write and power cut of each release (campaigns/case_explore.py)."""
        if args.only is not None:
            raise KilltestError("--explore CASE names its case: leave out --only")
        cases = load_cases(only=[args.explore], codes=FINDINGS)
        if args.release is not None and not any(args.release in (r.version, r.key) for r in cases[0].releases):
            raise KilltestError(f"--release {args.release}: {args.explore} has no such release")
        check_requirements(cases, args.release)
        result = explore_case(cases[0], args.out, release=args.release, jobs=args.jobs or 2, rebuild=args.rebuild,
                              say=progress.step,
                              command=command_line(), done=lambda so_far: write_exploration(args.out, so_far))
        progress.done(f"explore {cases[0].name}: {write_exploration(args.out, result)} and explore.json")
        return EXIT_PASSED


def _line(o: ReleaseOutcome) -> str:
    expected = "flagged: " + ", ".join(o.expect) if o.expect else "clean"
    said = release_frequencies(o.to_json()) or f"{o.rows} rows, {o.missing} lost"
    return (f"{o.case} {o.key}: expected {expected}, got {verdict_text(o.to_json())}"
            f" ({said}; {o.seconds:g}s): {'right' if o.as_expected else 'WRONG'}")
