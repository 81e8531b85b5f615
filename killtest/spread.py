"""A campaign spread over cores and machines by pytest-xdist: explore's crash points and fuzz's cases
as one pytest item each.

`crash_points(design, **options)` lists the crash points `explore` would try (one uninterrupted
recording run finds the store writes); `fuzz_examples(design, examples=, seed=, **options)` draws the
cases `fuzz` would run with that seed (one recording per catalog size). Both are deterministic, so
every xdist worker collects the same items in the same order. Each item then runs alone, on a site,
work dir and private servers of its own: `explore(design, only=point)` for a crash point and
`fuzz_example(design, example)` for a case, both judged by every idempotence promise, as explore and
fuzz judge them; a failure's `replay` line reproduces it from any directory.

    from killtest import crash_points, explore

    SPEC = "scraper/design.toml"
    OPTIONS = {"listing_pages": 2, "per_page": 3}

    @pytest.mark.parametrize("point", crash_points(SPEC, **OPTIONS))
    def test_crash_point(point):
        explore(SPEC, only=point, **OPTIONS).assert_passed()

`pytest -n auto` (cores) or `pytest --dist load --tx ssh=user@host//python=/venv/bin/python` (machines
with killtest and the design installed at the same paths) spreads the items; docs/how-to/pytest.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, TextIO

from killtest.api import DesignLike, Result, _finding, _given, _given_only, _parse, _progress, _result
from killtest.harness.check.verdict import Validity
from killtest.harness.cli.explore import replay_line
from killtest.harness.cli.shared import prepare_dirs
from killtest.harness.design.registry import design_named
from killtest.harness.errors import KilltestError


@dataclass(frozen=True)
class FuzzExample:
    """One fuzzed case: a catalog of `listing_pages` x `per_page` products and a kill schedule; 0 x 0
    on a recorded site, whose catalog is its recording."""

    schedule: str
    listing_pages: int
    per_page: int

    def __str__(self) -> str:  # the pytest item's id
        recorded = (self.listing_pages, self.per_page) == (0, 0)
        return f"{self.schedule}@{'recording' if recorded else f'{self.listing_pages}x{self.per_page}'}"


def crash_points(design: DesignLike, **options: Any) -> list[str]:
    """Every crash point `killtest explore` would try on `design` with these options (`listing_pages=`,
    `per_page=`, `lease=`, ...), as the text `explore(design, only=point)` takes."""
    from killtest.fixture_site.catalog import build_catalog
    from killtest.harness.campaigns.exploration import all_crash_points, refuse_power_cut
    from killtest.harness.running.orchestrator import stage
    from killtest.harness.running.runner import RunSettings

    args = _parse("explore", [_given(design)], options)
    found = design_named(args.design)
    settings = RunSettings(lease_s=args.lease, time_limit_s=args.time_limit, no_progress_s=args.no_progress_timeout)
    if args.power_cut:  # `power_cut=True`: each store write's power-cut twin too, refused before any server starts
        refuse_power_cut(found, "explore")
    with stage(build_catalog(args.listing_pages, args.per_page), [found]) as on:
        return [point.spec for point in all_crash_points(found, on, settings, args.work_dir, power_cut=args.power_cut)]


def fuzz_examples(design: DesignLike, *, examples: int | None = None, seed: int | None = None,
                  **options: Any) -> list[FuzzExample]:
    """The cases `killtest fuzz --examples N --seed S` would run on `design`, drawn but not run."""
    from killtest.harness.campaigns.exploration import refuse_power_cut
    from killtest.harness.campaigns.fuzzing import bench, draw_cases
    from killtest.harness.running.runner import RunSettings

    options.update(_given_only(examples=examples, seed=seed))
    args = _parse("fuzz", [_given(design)], options)
    found = design_named(args.design)
    settings = RunSettings(lease_s=args.lease, time_limit_s=args.time_limit)
    if args.power_cut:
        refuse_power_cut(found, "fuzz", needs_strace=False)
    with bench(found, settings, prefork=False, work_dir=args.work_dir, power_cut=args.power_cut) as on:
        cases = draw_cases(on, args.examples, args.seed)
    return [FuzzExample(case.schedule, case.pages, case.per_page) for case in cases]


def fuzz_example(design: DesignLike, example: FuzzExample, *, out: str | os.PathLike[str] | None = None,
                 log: TextIO | None = None, **options: Any) -> Result:
    """Run one fuzzed case as `killtest fuzz` runs it, held to the design's promises (every idempotence
    promise with strict=True)."""
    from killtest.harness.campaigns.fuzzing import Case, bench
    from killtest.harness.running.runner import RunSettings

    if not isinstance(example, FuzzExample):
        raise KilltestError(f"fuzz_example takes a FuzzExample from fuzz_examples(), not {example!r}")
    options.update(_given_only(out=out))
    args = _parse("fuzz", [_given(design)], options)
    found = design_named(args.design)
    prepare_dirs(args)
    _progress(log).step(f"[fuzz {found.name}] {example}")
    settings = RunSettings(lease_s=args.lease, time_limit_s=args.time_limit)
    judged = found.strict() if args.strict else found  # by its spec's promises, as `killtest fuzz` (issue 24)
    with bench(judged, settings, prefork=not args.no_prefork, work_dir=args.work_dir, power_cut=args.power_cut) as on:
        trial = on.trial(Case(example.listing_pages, example.per_page, example.schedule))
    where = f"schedule {example.schedule} on {trial.case.catalog}{'' if trial.case.recorded else ' products'}"
    # A recorded site's catalog is its recording: its replay line names no catalog size.
    recorded = trial.case.recorded
    replay = replay_line(args, found, example.schedule, listing_pages=None if recorded else example.listing_pages,
                         per_page=None if recorded else example.per_page) if trial.problems else None
    validity = (Validity.INVALID if trial.problems else Validity.VALID).value
    summary = (f"killtest fuzz {found.name} {example}: {'; '.join(trial.problems) or 'every promise kept'}"
               f"{'' if trial.exact else ' (a timed point: it may not repeat)'} — {validity}")
    return _result("fuzz", (found.name,), validity, [_finding(found.name, where, p) for p in trial.problems],
                   replay, args.out, [], summary, {"schedule": example.schedule, "exact": trial.exact,
                                                   "problems": trial.problems})
