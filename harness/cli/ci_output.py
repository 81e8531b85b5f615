"""What a command leaves for CI besides its results files: `--junit-xml PATH`, and the Markdown summary
appended to the job's summary when GitHub Actions names one ($GITHUB_STEP_SUMMARY).

Each command turns what it found into JUnit test cases here (harness/report/junit.py writes them):
a run of a campaign, a crash point of an exploration, a schedule of a fuzz, a design of the zoo; each
distinct failure (harness/check/distinct.py) is one failing case.
A failed case carries its findings and, where the command printed one, the replay line.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable

from killtest.harness.check.distinct import Broken, Failure, point_ranges
from killtest.harness.report.campaign import Campaign
from killtest.harness.report.junit import Case, write_junit
from killtest.harness.report.replay_lines import failed_run_replays
from killtest.harness.report.sections import replay_of
from killtest.harness.report.triage import failure_details, point_failures, run_failures, trial_failures


def publish(args: argparse.Namespace, suite: str, cases: list[Case], markdown_path: str | None,
            time_s: float | None = None) -> list[str]:
    """Write the JUnit file when asked and append the Markdown to the GitHub job summary when there is one;
    the paths written."""
    written = []
    if getattr(args, "junit_xml", None):
        write_junit(args.junit_xml, suite, cases, {"command": suite}, time_s)
        written.append(args.junit_xml)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and markdown_path and os.path.exists(markdown_path):
        with open(markdown_path, encoding="utf-8") as source, open(summary, "a", encoding="utf-8") as out:
            out.write(source.read().rstrip("\n") + "\n\n")
        written.append(summary)
    return written


def campaign_cases(campaign: Campaign, suite: str) -> list[Case]:
    """A case per run; one more for the campaign itself when a comparison, a baseline or an interruption failed it."""
    cases = []
    replays = campaign.settings.get("replays") or {}
    # One failing case per distinct failure (harness/check/distinct.py), naming the runs it covers.
    for number, failure in enumerate(run_failures(campaign.verdicts), 1):
        example = failure.example
        v = next(v for v in campaign.verdicts if v.design == failure.place and f"run{v.run}" == example.point)
        # The lines the terminal printed: with --expect its findings, and the exact one where timed kills landed.
        lines = failed_run_replays(replay_of(replays, v.design, v.run), v)
        details = "\n".join([*v.problems, f"validity: {v.validity}",
                             f"runs ({len(failure.points)}): {point_ranges(b.point for b in failure.points)}",
                             *(f"replay{'' if what == 'replay' else f' ({what})'}: {said}" for what, said in lines)])
        cases.append(Case(f"killtest.{suite}.{v.design}", f"failure {number}: {failure.title}", v.wall_s,
                          failure="; ".join(v.problems) or f"validity {v.validity}", details=details))
    for v in campaign.verdicts:
        name = f"run {v.run} (seed {v.seed})" if v.seed is not None else f"run {v.run}"
        if v.proved_nothing:
            cases.append(Case(f"killtest.{suite}.{v.design}", name, v.wall_s, skipped="no kill landed: the run"
                              " proved nothing"))
        elif v.valid:
            cases.append(Case(f"killtest.{suite}.{v.design}", name, v.wall_s))
    campaign_problems = [*campaign.comparison_problems, *campaign.regressions]
    if not campaign.complete:
        campaign_problems.append(f"the campaign did not finish: {campaign.stopped_by or 'stopped'}")
    if campaign_problems:
        cases.append(Case(f"killtest.{suite}", "campaign", failure="; ".join(campaign_problems),
                          details="\n".join(campaign_problems)))
    return cases


def point_cases(design: str, outcomes: Iterable, replay: Callable[[Broken], str], suite: str = "explore",
                failures: list[Failure] | None = None) -> list[Case]:
    """A failing case per distinct failure (harness/check/distinct.py), naming the points it covers and the
    replay line of its smallest; a case per crash point that kept its promises or was never reached."""
    outcomes = list(outcomes)
    failures = point_failures(outcomes) if failures is None else failures
    cases = []
    for number, failure in enumerate(failures, 1):
        example = failure.example
        points = point_ranges(b.point for b in failure.points)
        cases.append(Case(f"killtest.{suite}.{design}", f"failure {number}: {failure.title}",
                          failure="; ".join(example.problems) or ", ".join(failure.findings),
                          details="\n".join([*example.problems, f"points ({len(failure.points)}): {points}",
                                             f"{example.point}: {example.where or failure.place}",
                                             *failure_details(failure), f"replay: {replay(example)}"])))
    for o in outcomes:
        if not o.valid:
            continue  # in its distinct failure's case
        if not o.landed:
            cases.append(Case(f"killtest.{suite}.{design}", o.point, skipped="the crawl finished before this point"))
        else:
            cases.append(Case(f"killtest.{suite}.{design}", o.point))
    return cases


def fuzz_cases(result, replay: str | None, replay_of: Callable[[Broken], str],
               failures: list[Failure] | None = None) -> list[Case]:
    """The shrunk failure first, with its replay line; then a failing case per distinct failure (as explore's:
    report/triage.trial_failures), naming the schedules it covers and the replay line of its smallest; a case
    per schedule that kept every promise (campaigns/fuzzing.FuzzResult)."""
    suite = f"killtest.fuzz.{result.design}"
    cases = []
    if result.shrunk is not None:
        shrunk = result.shrunk
        cases.append(Case(suite, f"shrunk: {shrunk.case.schedule}", failure="; ".join(shrunk.problems),
                          details="\n".join([*shrunk.problems, f"replay: {replay}"])))
    for number, failure in enumerate(trial_failures(result.trials) if failures is None else failures, 1):
        example = failure.example
        cases.append(Case(suite, f"failure {number}: {failure.title}", failure="; ".join(example.problems),
                          details="\n".join([*example.problems,
                                             f"schedules ({len(failure.points)}): {failure.points_text()}",
                                             f"{example.point}: {example.where}", *failure_details(failure),
                                             f"replay: {replay_of(example)}"])))
    for trial in result.trials:
        if not trial.problems:
            cases.append(Case(suite, f"{trial.case.schedule} on {trial.case.catalog}"))
    return cases


def zoo_cases(outcomes: Iterable) -> list[Case]:
    """A case per zoo design (campaigns/zoo_runs.ZooOutcome): passed when its mistake is flagged and the
    control is clean."""
    cases = []
    for o in outcomes:
        if o.as_expected:
            cases.append(Case("killtest.zoo", o.design))
            continue
        found = ", ".join(o.findings) or "nothing"
        control = "clean" if o.control_clean else ", ".join(o.control_findings)
        message = f"expected {o.expect}, found {found}; control {control}"
        cases.append(Case("killtest.zoo", o.design, failure=message,
                          details="\n".join([message, *o.problems, f"replay: {o.replay}" if o.replay else ""]).strip()))
    return cases
