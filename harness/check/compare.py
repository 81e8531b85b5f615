"""Compare designs across a campaign: an idempotent design must beat the control's wall time.

Pure functions of the verdicts and each design's traits (killtest.harness.check.verdict.DesignTraits);
`compare_designs` judges (--check-faster), `per_run_wins` is a figure for the report.
"""

from __future__ import annotations

from collections.abc import Mapping

from killtest.harness.check.verdict import DesignTraits, RunVerdict


def compare_designs(verdicts: list[RunVerdict], designs: Mapping[str, DesignTraits]) -> list[str]:
    """Over the schedules both ran, an idempotent design's total wall time must beat the naive control's.

    Summed, not run by run: one unlucky run, where kills keep landing on freshly re-claimed pages and
    the final start waits out lease after lease, may take longer than a naive re-crawl.
    """
    problems = []
    for claimant, control in _design_pairs(verdicts, designs):
        ours, theirs = _walls_on_shared_schedules(verdicts, claimant, control)
        if ours and sum(ours) >= sum(theirs):
            problems.append(f"{claimant} took {sum(ours):.2f}s over {len(ours)} schedules,"
                            f" not less than {control}'s {sum(theirs):.2f}s")
    return problems


def per_run_wins(verdicts: list[RunVerdict], designs: Mapping[str, DesignTraits]) -> list[str]:
    """How often each idempotent design beat the control run by run: a figure for the report, not a check."""
    lines = []
    for claimant, control in _design_pairs(verdicts, designs):
        ours, theirs = _walls_on_shared_schedules(verdicts, claimant, control)
        wins = sum(a < b for a, b in zip(ours, theirs, strict=True))
        lines.append(f"{claimant} finished before {control} in {wins} of {len(ours)} runs on the same schedule"
                     f" ({sum(ours):.2f}s against {sum(theirs):.2f}s in all)")
    return lines


def _design_pairs(verdicts: list[RunVerdict], designs: Mapping[str, DesignTraits]) -> list[tuple[str, str]]:
    """(claimant, control) for every design that claims idempotence and every control in the campaign."""
    names = list(dict.fromkeys(v.design for v in verdicts))
    return [(c, n) for c in names if designs[c].claims_idempotence
            for n in names if designs[n].control]


def _walls_on_shared_schedules(verdicts: list[RunVerdict], claimant: str,
                               control: str) -> tuple[list[float], list[float]]:
    walls = {(v.design, v.seed): v.wall_s for v in verdicts}
    seeds = sorted({v.seed for v in verdicts if (claimant, v.seed) in walls and (control, v.seed) in walls})
    return [walls[(claimant, s)] for s in seeds], [walls[(control, s)] for s in seeds]
