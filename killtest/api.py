"""killtest's public Python API: load a design, kill-test it, explore its crash points, fuzz its kill
schedules, and read the verdict back as plain data.

The names here (re-exported by `killtest`) are the whole public surface; `killtest.harness`,
`killtest.fixture_site` and `killtest.scrapers` are internal and may change without notice.

Each call is the command of the same name, with the same options, run in this process: a keyword
argument is the command's long option (`listing_pages=2` is `--listing-pages 2`, `no_prefork=True`
is `--no-prefork`, a list repeats a repeatable option), parsed and checked by the command line's own
parser (harness/cli), so a value the command refuses is refused here, as a one-line `KilltestError`.
The result files are the command's (`out=`, default `results/`), and so is the default of every
option left out. Progress goes to `log` (default: standard error), one line a start.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO, Union

from killtest.harness import lifeline
from killtest.harness.check.findings import Finding as Code
from killtest.harness.check.verdict import Validity
from killtest.harness.cli import build_parser
from killtest.harness.cli.explore import design_argument, exploration_passed, explore_from_args, replay_line
from killtest.harness.cli.fuzz import fuzz_from_args
from killtest.harness.cli.run import run_designs
from killtest.harness.design.model import Design
from killtest.harness.design.registry import design_named
from killtest.harness.errors import KilltestError
from killtest.harness.options import options_of
from killtest.harness.report.campaign import to_json
from killtest.harness.report.sections import replay_of
from killtest.harness.running.progress import Progress

__all__ = ["Design", "Finding", "KilltestError", "KilltestFailed", "Result", "explore", "fuzz", "load_design", "run"]

DesignLike = Union[str, "os.PathLike[str]", Design]
_PROMISE_OF = {code.value: code.promise.value for code in Code}  # finding code -> the promise it breaks
# The options a timed run's rerun line leaves out: where results go, and what compares whole campaigns.
_NOT_RERUN = {"design", "runs", "seed", "out", "name", "work_dir", "baseline", "max_slowdown", "max_extra_repeats",
              "check_faster", "no_plot", "all_timelines", "junit_xml"}


@dataclass(frozen=True)
class Finding:
    """One broken promise: the design, where it broke (a run, a crash point, a schedule), what was found,
    and the promise it broke (`no_lost_records`, ...: docs/reference/findings.md)."""

    design: str
    where: str  # "run 2 (seed 2)", "crash point l:scrapers/x.py:complete+3:2", "schedule r3 on 2x3 products"
    message: str  # "lost 1 of 6 records"
    promise: str | None  # None for a campaign's own problem (a comparison, a baseline regression)

    def __str__(self) -> str:
        broke = f" (broke {self.promise})" if self.promise else ""
        return f"{self.design} {self.where}: {self.message}{broke}"


@dataclass(frozen=True)
class Result:
    """What a run, explore or fuzz found, as plain data: the verdict, the findings, the line that replays
    the first failure, and where the result files are."""

    command: str  # "run", "explore" or "fuzz"
    designs: tuple[str, ...]
    validity: str  # "valid", "invalid" or "unknown" (the runs proved nothing: docs/architecture.md)
    findings: tuple[Finding, ...]
    replay: str | None  # `killtest replay ...` (or, for timed kills, `killtest run ... --runs 1 --seed N`)
    results_dir: str  # absolute
    files: tuple[str, ...]  # the result files written, absolute paths
    summary: str  # one line
    data: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # the .json result file's content

    @property
    def passed(self) -> bool:
        """The verdict is valid: every promise the design makes was kept, and the runs proved it."""
        return self.validity == Validity.VALID.value

    @property
    def not_tested(self) -> dict[str, str]:
        """design -> what its kills could not have found, where every killed start died before storing a record
        (harness/check/kill_phases.py): a PASS holds only for the crash states the kills reached."""
        summary = self.data.get("summary") or {}
        return {design: gap for design, figures in summary.items()
                if isinstance(figures, dict) and (gap := (figures.get("crash_states") or {}).get("gap"))}

    def report(self) -> str:
        """The verdict in a few lines: the summary, each finding, what was not tested, the replay line and the
        results."""
        lines = [self.summary, *(f"  {finding}" for finding in self.findings)]
        lines += [f"  {design}: NOT TESTED: {gap}" for design, gap in self.not_tested.items()]
        if self.replay:
            lines.append(f"replay: {self.replay}")
        lines.append(f"results: {self.results_dir}")
        return "\n".join(lines)

    def assert_passed(self) -> None:
        """Raise KilltestFailed (an AssertionError: pytest fails the test with the report) unless it passed."""
        __tracebackhide__ = True  # pytest shows the caller's line, not this one
        if not self.passed:
            raise KilltestFailed(self)


class KilltestFailed(AssertionError):
    """A verdict that is not valid; `.result` holds it, and the message is its report."""

    def __init__(self, result: Result) -> None:
        super().__init__(result.report())
        self.result = result


def load_design(name_or_path: DesignLike) -> Design:
    """A design: a built-in name (`idempotent`, `zoo-done-before-record`, ...) or the path of a spec
    (.toml). A mistake in the spec is a one-line KilltestError naming the file and the line."""
    if isinstance(name_or_path, Design):
        return name_or_path
    return design_named(_given(name_or_path))


def run(design: DesignLike | Sequence[DesignLike], *, schedule: str | None = None, runs: int | None = None,
        kills: int | None = None, seed: int | None = None, out: str | os.PathLike[str] | None = None,
        log: TextIO | None = None, **options: Any) -> Result:
    """`killtest run`: kill-test one design (or several, on the same schedules): `runs` runs of `kills`
    seeded timed SIGKILLs each, or the exact kill points of `schedule` (`"r5,r9"`), then one start that
    runs to the end; the store is held to every promise the design's spec does not waive."""
    many: Sequence[DesignLike] = [design] if isinstance(design, (str, os.PathLike, Design)) else design
    givens = list(dict.fromkeys(_given(d) for d in many))
    options.update(_given_only(schedule=schedule, runs=runs, kills=kills, seed=seed, out=out))
    args = _parse("run", givens, options)
    designs, campaign = run_designs(args, _progress(log))
    by_name = {d.name: design_argument(given, d) for given, d in zip(givens, designs)}
    findings = []
    for verdict in (v for v in campaign.verdicts if not v.valid):
        where = f"run {verdict.run} " + (f"(seed {verdict.seed})" if schedule is None else f"(schedule {schedule})")
        findings += [_finding(verdict.design, where, problem, _PROMISE_OF.get(code))
                     for code, problem in zip(verdict.findings, verdict.problems)]
    findings += [Finding("", "comparison", problem, None) for problem in campaign.comparison_problems]
    findings += [Finding("", "baseline", regression, None) for regression in campaign.regressions]
    failed = next((v for v in campaign.verdicts if not v.valid), None)
    replay = None
    if failed is not None:
        failed_design = next(d for d in designs if d.name == failed.design)
        planned = replay_of(campaign.settings.get("replays") or {}, failed.design, failed.run)
        if planned is not None:  # the line the command itself printed for this run
            replay = planned
        elif schedule is not None:  # exact points replay exactly, judged by the design's own promises
            replay = replay_line(args, failed_design, schedule, given=by_name[failed.design], strict=False)
        else:  # timed kills: the failing run's seed again, alone
            rest = {dest: value for dest, value in options.items() if dest not in _NOT_RERUN}
            measured = campaign.settings.get("measured_pace")  # pinned, so the rerun is not measured afresh
            if measured:  # its pin: `f` points spread over the work, as measured, not delays after the spawn
                rest |= {"kill_delay": measured["kill_delay_option"], "time_limit": measured["time_limit_s"]}
            replay = shlex.join(["killtest", *_words("run", [by_name[failed.design]], rest), "--runs", "1",
                                 "--seed", str(failed.seed)])
    if not campaign.complete:
        validity = Validity.UNKNOWN.value
    elif campaign.valid:
        validity = Validity.VALID.value
    else:
        merged = Validity.merge(Validity(v.validity) for v in campaign.verdicts)
        validity = (Validity.INVALID if merged is Validity.VALID else merged).value
    base = os.path.join(args.out, args.name)
    runs_done = len(campaign.verdicts)
    summary = (f"killtest run {', '.join(by_name)}: {runs_done} run{'' if runs_done == 1 else 's'},"
               f" {sum(not v.valid for v in campaign.verdicts)} failed — {validity}")
    return _result("run", tuple(by_name), validity, findings, replay, args.out,
                   [f"{base}.{ext}" for ext in ("json", "md", "html", "png")], summary, to_json(campaign))


def explore(design: DesignLike, *, only: str | None = None, out: str | os.PathLike[str] | None = None,
            log: TextIO | None = None, **options: Any) -> Result:
    """`killtest explore`: kill once at every request boundary, store write and (for a Python design)
    commit-path line, or only at the points of `only`, and hold each outcome to the design's promises
    (strict=True: every idempotence promise, and the verdict fails only for a design that claims them)."""
    given = _given(design)
    options.update(_given_only(only=only, out=out))
    args = _parse("explore", [given], options)
    found, exploration, base = explore_from_args(args, _progress(log))
    findings = [_finding(found.name, f"crash point {o.point}", problem)
                for o in exploration.broken for problem in o.problems]
    replay = replay_line(args, found, exploration.broken[0].point) if exploration.broken else None
    validity = (Validity.VALID if exploration_passed(found, exploration) else Validity.INVALID).value
    if validity == Validity.VALID.value and not any(o.landed for o in exploration.outcomes):
        validity = Validity.UNKNOWN.value  # no point was reached: nothing was proved, which is no PASS
    summary = (f"killtest explore {found.name}: {len(exploration.outcomes)} crash points,"
               f" {len(exploration.broken)} broken — {validity}")
    return _result("explore", (found.name,), validity, findings, replay, args.out,
                   [f"{base}.{ext}" for ext in ("json", "md", "html")], summary, exploration.to_json())


def fuzz(design: DesignLike, *, examples: int | None = None, seed: int | None = None,
         max_seconds: float | None = None, out: str | os.PathLike[str] | None = None, log: TextIO | None = None,
         **options: Any) -> Result:
    """`killtest fuzz`: Hypothesis draws small catalogs and kill schedules of every kind (`examples` of
    them, within `max_seconds`); the first that breaks an idempotence promise is shrunk to the smallest
    schedule that still does, and its replay line is the result's `replay`."""
    given = _given(design)
    options.update(_given_only(examples=examples, seed=seed, max_seconds=max_seconds, out=out))
    args = _parse("fuzz", [given], options)
    found, result, replay, base = fuzz_from_args(args, _progress(log))
    shrunk = result.shrunk
    findings = [] if shrunk is None else [
        _finding(found.name, f"schedule {shrunk.case.schedule} on {shrunk.case.pages}x{shrunk.case.per_page}"
                             " products", problem) for problem in shrunk.problems]
    validity = (Validity.VALID if shrunk is None else Validity.INVALID).value
    failed = sum(bool(t.problems) for t in result.trials)
    summary = f"killtest fuzz {found.name}: {len(result.trials)} schedules, {failed} broke a promise — {validity}"
    return _result("fuzz", (found.name,), validity, findings, replay, args.out,
                   [f"{base}.{ext}" for ext in ("json", "md", "html")], summary, {**result.to_json(), "replay": replay})


def _given(design: DesignLike) -> str:
    """What `--design` says for `design`: a built-in name, or a spec's absolute path."""
    if isinstance(design, Design):
        given = design.spec_file or design.name
        if design_named(given) != design:  # the command reloads it by name or path: a changed copy would be lost
            raise KilltestError(f"design {design.name!r} differs from what {given!r} loads: a Design changed in"
                                " code cannot be run; write the change into a spec and give its path")
        return given
    try:
        text = os.fspath(design)
    except TypeError:
        text = ""
    if not isinstance(text, str) or not text:
        raise KilltestError(f"a design is a built-in name or the path of a spec (.toml), not {design!r}")
    return os.path.abspath(text) if text.endswith(".toml") or os.sep in text else text


def _given_only(**values: Any) -> dict[str, Any]:
    return {dest: os.fspath(value) if isinstance(value, os.PathLike) else value
            for dest, value in values.items() if value is not None}


def _words(command: str, designs: list[str], options: dict[str, Any]) -> list[str]:
    """The command line of `command` with these designs and options (keyed by option dest)."""
    taken = {option.dest: option for option in options_of(command) if option.dest != "design"}
    unknown = sorted(set(options) - set(taken))
    if unknown:
        raise KilltestError(f"killtest {command} takes no option {', '.join(unknown)}; it takes"
                            f" {', '.join(sorted(taken))}")
    words = [command, *(word for given in designs for word in ("--design", given))]
    for dest, value in options.items():
        words += taken[dest].words(os.fspath(value) if isinstance(value, os.PathLike) else value)
    return words


def _parse(command: str, designs: list[str], options: dict[str, Any]) -> argparse.Namespace:
    """The options as the command line's parser reads them: its defaults, its checks, its one-line errors."""
    words = _words(command, designs, options)
    args = build_parser().parse_args(words)
    args.argv = words  # the result files record this command line (harness/cli/plans_from_args.typed_command)
    lifeline.sweep_dead_temp_dirs([None, args.work_dir])  # as every command does first
    return args


def _progress(log: TextIO | None) -> Progress:
    return Progress(log if log is not None else sys.stderr)


def _finding(design: str, where: str, problem: str, promise_of_code: str | None = None) -> Finding:
    """A checker's problem line (`lost 1 of 6 records (broke no_lost_records)`) as a Finding; a line that
    names no promise takes its finding code's (`promise_of_code`)."""
    message, broke, promise = problem.rpartition(" (broke ")
    if not broke:
        return Finding(design, where, problem, promise_of_code)
    return Finding(design, where, message, promise.rstrip(")"))


def _result(command: str, designs: tuple[str, ...], validity: str, findings: list[Finding], replay: str | None,
            out: str, files: list[str], summary: str, data: dict[str, Any]) -> Result:
    return Result(command, designs, validity, tuple(findings), replay, os.path.abspath(out),
                  tuple(os.path.abspath(f) for f in files if os.path.exists(f)), summary, data)
