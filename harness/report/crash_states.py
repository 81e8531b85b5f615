"""Where the kills landed, in every output: the phase table, the "stored records: k of n" line and the gap.

A campaign's kills are summed per design from each run's `killed_starts` (harness/check/kill_phases.py):
how many killed starts had made no request, fetched without writing to their store, written without a
record coming of it, or stored records; how many died early, in the middle or late in the crawl; and,
when every killed start of the design reached one phase, what its runs could not have found. The
terminal, the Markdown and HTML page, the JSON's summary and the pytest plugin all say it the same way:
a PASS never hides a gap.
"""

from __future__ import annotations

from collections.abc import Sequence

from killtest.harness.check.kill_phases import PHASES, STAGES, KilledStart, coverage_gap, phase_counts, storing_line
from killtest.harness.check.verdict import RunVerdict

PHASES_TITLE = "Kill phases: the crash states the kills reached"
PHASES_INTRO = ("Each killed start by its phase when the kill came (no request yet; fetched pages but had not written"
                " to its store; had written to its store without a record coming of it; had stored records), and by"
                " how far the run's crawl had got (the share of product pages fetched: early under a third, late two"
                " thirds and more). A PASS holds for these states only.")


def design_phases(runs: Sequence[RunVerdict]) -> dict:
    """The JSON summary's `crash_states` of one design's runs: counts per phase and stage, the line, the gap."""
    starts = [KilledStart(**start) for v in runs for start in v.killed_starts]
    return {"killed_starts": len(starts), **phase_counts(starts), "line": storing_line(starts),
            "gap": coverage_gap(starts)}


def _by_design(verdicts: Sequence[RunVerdict]) -> dict[str, list[RunVerdict]]:
    designs: dict[str, list[RunVerdict]] = {}
    for v in verdicts:
        designs.setdefault(v.design, []).append(v)
    return designs


def gaps(verdicts: Sequence[RunVerdict]) -> dict[str, str]:
    """design -> what its kills could not have found, for every design whose kills reached one phase only."""
    return {design: gap for design, runs in _by_design(verdicts).items() if (gap := design_phases(runs)["gap"])}


def terminal_lines(verdicts: Sequence[RunVerdict]) -> list[str]:
    """One line per design with kills: its phases and stages; then each design's gap, said plainly."""
    lines = []
    for design, runs in _by_design(verdicts).items():
        phases = design_phases(runs)
        if not phases["killed_starts"]:
            continue
        by_phase = ", ".join(f"{phase} {phases[phase]}" for phase in PHASES)
        by_stage = ", ".join(f"{stage} {phases[stage]}" for stage in STAGES)
        lines.append(f"{design}: {phases['line']} (killed starts by phase: {by_phase}; by where in the crawl:"
                     f" {by_stage})")
        if phases["gap"]:
            lines.append(f"{design}: NOT TESTED: {phases['gap']}")
    return lines


def section_rows(verdicts: Sequence[RunVerdict]) -> tuple[list[str], list[list[str]], list[str]]:
    """The page's table (header, rows) and its bullets: one row per design, one bullet per gap."""
    header = ["Design", "killed starts", *PHASES, *STAGES]
    rows, bullets = [], []
    for design, runs in _by_design(verdicts).items():
        phases = design_phases(runs)
        if not phases["killed_starts"]:
            continue
        rows.append([design, str(phases["killed_starts"]), *(str(phases[name]) for name in (*PHASES, *STAGES))])
        bullets.append(f"{design}: {phases['line']}.")
        if phases["gap"]:
            bullets.append(f"{design}: **not tested**: {phases['gap']}.")
        bullets += [f"{design} run {v.run}: " + "; ".join(map(_start_words, v.killed_starts)) for v in runs
                    if v.killed_starts]
    return header, rows, bullets


def _start_words(start: dict) -> str:
    """`start 2 (f0.27:1, killed 0.61s after its spawn): 3 requests, fetched, no store write, early (17% of the
    products fetched)`: one killed start's crash state, in the page's per-run bullets."""
    rows = "" if not start["rows_added"] else f" (+{start['rows_added']} rows)"
    return (f"start {start['start']} ({start['point']}, killed {start['alive_s']:g}s after its spawn):"
            f" {start['requests']} requests, {start['phase']}{rows}, {start['stage']}"
            f" ({start['crawl_share']:.0%} of the products fetched)")


def caveat(verdicts: Sequence[RunVerdict]) -> str:
    """What follows a PASS when some design's kills reached one phase only: `` (at the crash states ...)``."""
    found = gaps(verdicts)
    if not found:
        return ""
    return " (at the crash states its kills reached; not tested for " + ", ".join(found) + ": see the kill phases)"
