"""`killtest calibrate`: run the control at several site paces, to see which pace meets the article's band."""

from __future__ import annotations

import argparse
import os

from killtest.harness.cli.command import EXIT_PASSED, Command
from killtest.harness.cli.plans_from_args import timed_plan
from killtest.harness.cli.shared import control_design, prepare_dirs
from killtest.harness.errors import KilltestError
from killtest.harness.files import write_atomically
from killtest.harness.published import PUBLISHED_NAIVE_ROWS_PER_PRODUCT
from killtest.harness.report.campaign import summarise
from killtest.harness.running.orchestrator import run_campaign
from killtest.harness.running.progress import Progress


class CalibrateCommand(Command):
    name = "calibrate"
    help = "run the naive control at several site paces"

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        try:
            paces = [float(x) for x in args.paces.split(",") if x.strip()]
        except ValueError:
            raise KilltestError(f"--paces takes comma-separated requests per second, not {args.paces!r}") from None
        if not paces or any(x < 0 for x in paces):
            raise KilltestError("--paces needs one or more paces of zero (unpaced) or more requests per second")
        prepare_dirs(args)
        control = control_design()
        rows = []
        for pace in paces:
            campaign = run_campaign(timed_plan(args, [control], pace, f"calibration-pace-{pace:g}"), progress)
            summary = summarise(campaign)[control.name]
            rows.append((pace, summary))
            gap = summary["band_gap"]
            progress.done(f"pace {pace_text(pace)}: {control.name} rows per product"
                          f" {gap['ours'][0]:.2f}–{gap['ours'][1]:.2f}"
                          f" (published {gap['published'][0]}–{gap['published'][1]})")
        write_atomically(os.path.join(args.out, "calibration.md"), calibration_markdown(rows, args, control.name))
        nearest = min(rows, key=lambda row: distance_to_band(row[1]["band_gap"]))
        progress.done(f"nearest the published band: pace {pace_text(nearest[0])};"
                      f" table in {os.path.join(args.out, 'calibration.md')}")
        return EXIT_PASSED


def pace_text(pace: float) -> str:
    return f"{pace:g} requests/s" if pace else "unpaced"


def distance_to_band(gap: dict) -> float:
    return gap["lowest_below_band_by"] + gap["highest_above_band_by"]


def calibration_markdown(rows: list[tuple[float, dict]], args: argparse.Namespace, control: str) -> str:
    """The sweep as a table: each pace's rows per product and how far they lie from the published band."""
    low, high = PUBLISHED_NAIVE_ROWS_PER_PRODUCT
    lines = [f"# Site pace against the {control} control's rows per product", "",
             f"{args.runs} runs per pace, {args.kills} kills each, seeds from {args.seed}, added latency"
             f" {args.latency:g} s. Published band: {low}–{high} rows per product.", "",
             "| pace | rows per product | distance to band | wall s | start-up s | requests/s | kills before work |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for pace, s in rows:
        gap = s["band_gap"]
        lines.append(f"| {pace_text(pace)} | {gap['ours'][0]:.2f}–{gap['ours'][1]:.2f} | {distance_to_band(gap):.2f}"
                     f" | {s['wall_s'][0]:.2f}–{s['wall_s'][1]:.2f} | {s['median_startup_s']}"
                     f" | {s['median_request_rate']} | {s['kills_before_work']} of {s['kills']} |")
    return "\n".join(lines) + "\n"
