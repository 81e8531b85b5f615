"""`killtest explore`: kill once at every request boundary, store write and commit-path line, and check each;
with `--power-cut`, also cut the power at every store write of a file store."""

from __future__ import annotations

import argparse
import json
import os
import shlex
from collections.abc import Sequence

from killtest.fixture_site.catalog import build_catalog
from killtest.harness.campaigns.exploration import Exploration, explore_design, refuse_power_cut
from killtest.harness.campaigns.parallel import default_jobs
from killtest.harness.cli.ci_output import point_cases, publish
from killtest.harness.cli.command import EXIT_CHECK_FAILED, EXIT_PASSED, Command
from killtest.harness.cli.plans_from_args import typed_command
from killtest.harness.cli.shared import prepare_dirs
from killtest.harness.defaults import NO_PROGRESS_S
from killtest.harness.design.model import Design
from killtest.harness.design.registry import design_named
from killtest.harness.design.site_spec import site_of
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.files import write_atomically
from killtest.harness.options import options_of, replay_words
from killtest.harness.report.coverage_words import coverage_lines
from killtest.harness.report.pasted import for_page
from killtest.harness.report.render import exploration_markdown
from killtest.harness.report.triage import (
    by_promise_line,
    exploration_header,
    failure_lines,
    failures_json,
    locating_words,
    point_failures,
    waived_line,
)
from killtest.harness.report.triage_page import exploration_page
from killtest.harness.running.progress import Progress
from killtest.harness.running.runner import RunSettings


class ExploreCommand(Command):
    name = "explore"
    help = "kill once at every request boundary, store write and commit-path line"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        add_short_flag(parser, "--jobs", "-j")

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        design, exploration, base = explore_from_args(args, progress)
        replay = lambda broken: replay_line(args, design, broken.point, expect=broken.findings)  # noqa: E731
        failures = point_failures(exploration.outcomes)
        publish(args, "explore", point_cases(design.name, exploration.outcomes, replay, failures=failures),
                f"{base}.md", exploration.elapsed_s)
        for line in failure_lines(failures, replay):
            progress.done(line)
        progress.done(f"explore {design.name}: {exploration_header(exploration.outcomes, failures)},"
                      f" {exploration.schedules_per_minute} schedules/minute; {base}.{{json,md,html}}")
        if promised := by_promise_line(failures):
            progress.done(promised)
        if waived := waived_line(exploration.outcomes):
            progress.done(waived)
        for line in coverage_lines(exploration.coverage):
            progress.done(line)
        if locating_words(exploration):
            progress.done(located_line(exploration))
        if exploration.broken:
            progress.done(f"replay the first: {replay(failures[0].example)}")
        return EXIT_PASSED if exploration_passed(design, exploration) else EXIT_CHECK_FAILED


def explore_from_args(args: argparse.Namespace, progress: Progress) -> tuple[Design, Exploration, str]:
    """What `explore` runs, without the printing: the design, its exploration, and the base path of the
    result files it wrote (killtest.api.explore calls it too)."""
    design = design_named(args.design)
    if args.power_cut:
        refuse_power_cut(design, "explore")  # before the points are parsed or a directory is made
    points = list(parse_schedule(args.only, design).points) if args.only else None
    prepare_dirs(args)
    catalog = build_catalog(args.listing_pages, args.per_page)
    settings = RunSettings(lease_s=args.lease, time_limit_s=args.time_limit, no_progress_s=args.no_progress_timeout,
                           restart_delay=args.restart_delay)
    exploration = explore_design(design, catalog, settings, points, work_dir=args.work_dir,
                                 prefork=not args.no_prefork, progress=progress,
                                 jobs=args.jobs or default_jobs(), power_cut=args.power_cut,
                                 strict=getattr(args, "strict", False), locate=True)
    base = os.path.join(args.out, f"explore-{design.name}")
    write_exploration(args, design, exploration, base)
    return design, exploration, base


def write_exploration(args: argparse.Namespace, design: Design, exploration: Exploration, base: str) -> None:
    """explore-DESIGN.{json,md,html}: each distinct failure once with its replay line, then every point."""
    replay = lambda broken: replay_line(args, design, broken.point, expect=broken.findings)  # noqa: E731
    failures = point_failures(exploration.outcomes)
    found = {**exploration.to_json(), "distinct_failures": len(failures), "failures": failures_json(failures, replay)}
    # One timeline per distinct failure, beside it: every broken point's made 3.6 MB of JSON on 192 points.
    timelines = {o["point"]: o.pop("timeline", {}) for o in found["outcomes"]}
    for failure in found["failures"]:
        failure["timeline"] = timelines.get(failure["example"], {})
    write_atomically(f"{base}.json", json.dumps(found, indent=2) + "\n")
    # Written inside a checkout (results/explore-*.md), its commands and frames read from the root (report/pasted.py).
    page = exploration_markdown(exploration, typed_command(args), replay)
    write_atomically(f"{base}.md", for_page(page, f"{base}.md"))
    write_atomically(f"{base}.html", for_page(exploration_page(exploration, typed_command(args), failures, replay,
                                                               os.path.basename(base)), f"{base}.html"))


def located_line(exploration: Exploration) -> str:
    """What locating store writes in the program cost, within the exploration's time."""
    return f"source locations: {locating_words(exploration)}"


def exploration_passed(design: Design, exploration: Exploration) -> bool:
    """Explore judges a design by its spec's promises and fails on any broken point; with --strict it holds
    every design to the idempotence promises, but fails only one whose spec claims them (as it always did)."""
    if exploration.strict:
        return not (design.claims_idempotence and exploration.broken)
    return not exploration.broken


def replay_line(args: argparse.Namespace, design: Design, schedule: str, given: str | None = None,
                strict: bool | None = None, expect: Sequence[str] = (), **settings: object) -> str:
    """`killtest replay ...` for one schedule, with every setting this command shares with replay
    (`settings` override them: fuzz's shrunk catalog). `given` is what --design said for this design
    (args.design by default); `strict`: the command judged the design by every idempotence promise,
    as explore --strict and fuzz --strict do, so the replay must too (None: as args.strict says). `expect`: the
    findings of the failure it is printed for (--expect), which the replay says it reproduced or not.

    Only the settings the run depends on: no --lease for a design that takes none, and no site pace or latency
    for a schedule of exact points only on such a design (where the kill lands does not depend on the time).

    A design given by path is printed as an absolute path, so the line works from any directory."""
    shared = {o.dest for o in options_of("replay") if o.replayed} & {o.dest for o in options_of(args.command)}
    # The design and the schedule are this line's own (run's --schedule, when given, is only one of them).
    same = {dest: getattr(args, dest) for dest in sorted(shared) if dest not in ("design", "schedule")}
    if site_of(design) is not None:  # a recorded site's catalog is its recording: replay names no size
        same = {dest: value for dest, value in same.items() if dest not in ("listing_pages", "per_page")}
    # The site's pace matters to a timed kill (where it lands) and to a lease (what ran out before a kill): else not.
    timeless = exact(schedule) and not design.takes_lease
    unused = ({"lease"} if not design.takes_lease else set()) | ({"pace", "latency"} if timeless else set())
    # ... nor one that says what replay does by default (--workers 1, --recrawls 0, --latency 0): it is noise there.
    defaults = {o.dest: o.default for o in options_of("replay")}
    same = {dest: value for dest, value in same.items() if dest not in unused and value != defaults.get(dest)}
    settings = {"expect": ",".join(expect), **settings} if expect else settings
    # explore --strict and fuzz --strict judge every design by the idempotence promises: so must the replay.
    strict = getattr(args, "strict", False) if strict is None else strict
    judged = {"strict": True} if strict and not design.claims_idempotence else {}
    replay = replay_words({"design": [design_argument(given or args.design, design)], "schedule": schedule, **same,
                           **judged, **settings})
    # Repeated only when the user changed it: a point that needed a longer patience must not stall in its replay.
    patience = getattr(args, "no_progress_timeout", None)
    if patience is not None and patience != NO_PROGRESS_S:
        replay += ["--no-progress-timeout", f"{patience:g}"]
    return shlex.join(["killtest", "replay", *replay])


EXACT_KINDS = ("r", "w", "aw", "xr", "xw", "l:")  # points that fire at one place of the crawl, whatever the time


def exact(schedule: str) -> bool:
    """A schedule of exact points only: none fires after a delay (`t0.4`, `f0.2:5`, a pause, a redeploy)."""
    return all(point.strip().startswith(EXACT_KINDS) for point in schedule.split(","))


def design_argument(given: str, design: Design) -> str:
    """What `--design` must say on a printed line: the built-in name, or the spec's absolute path."""
    if given.endswith(".toml") or os.sep in given:
        return os.path.abspath(design.spec_file or given)
    return design.name


def add_short_flag(parser: argparse.ArgumentParser, flag: str, short: str) -> None:
    """Let `short` (`-j`) stand for the table's `flag` (`--jobs`), as make and pytest-xdist spell it.

    The option table (harness/options.py) knows long flags only; argparse keeps one registry of option
    strings per parser, shared with its groups, so the alias is added there."""
    action = parser._option_string_actions[flag]
    action.option_strings = [*action.option_strings, short]  # the long flag stays first, as the table names it
    parser._option_string_actions[short] = action
