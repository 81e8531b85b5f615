"""`killtest scale`: the same kill test at several worker counts, a benchmark."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

from killtest.harness.cli.command import EXIT_CHECK_FAILED, EXIT_PASSED, Command
from killtest.harness.cli.plans_from_args import timed_plan
from killtest.harness.cli.shared import command_line, counts, designs_named, prepare_dirs
from killtest.harness.files import write_atomically
from killtest.harness.report.scaling_table import plot_scaling, scaling_markdown, scaling_rows
from killtest.harness.report.writer import plotting_installed
from killtest.harness.running.orchestrator import run_campaign
from killtest.harness.running.progress import Progress


class ScaleCommand(Command):
    name = "scale"
    help = "the same kill test at several worker counts: a benchmark"

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        designs = designs_named(args.design)
        worker_counts = counts(args.workers_list, "--workers-list", "worker counts", "1,2,4")
        prepare_dirs(args)
        campaigns = []
        for workers in worker_counts:
            args.workers = workers
            plan = timed_plan(args, designs, args.pace, f"scaling-{workers}w")
            plan = dataclasses.replace(plan, out_dir=os.path.join(args.out, "scaling"), plot=False)
            campaigns.append((workers, run_campaign(plan, progress)))
        rows = scaling_rows(campaigns)
        settings = campaigns[0][1].settings
        write_atomically(os.path.join(args.out, "scaling.json"),
                         json.dumps({"command": command_line(), "settings": settings, "rows": rows}, indent=2) + "\n")
        write_atomically(os.path.join(args.out, "scaling.md"), scaling_markdown(rows, command_line(), settings))
        if not args.no_plot and plotting_installed():
            plot_scaling(rows, os.path.join(args.out, "scaling.png"))
        for row in rows:
            progress.done(f"{row['design']} x{row['workers']}: wall {row['wall_s']}s, requests {row['requests']:g},"
                          f" repeated {row['repeated_requests']:g}, rows {row['rows']:g}")
        progress.done(f"results: {os.path.join(args.out, 'scaling')}.{{json,md,png}}")
        # A benchmark fails on a broken promise, not on a kill that came before eight workers had started.
        broken = [v for _, c in campaigns for v in c.verdicts if not v.valid and not v.proved_nothing]
        return EXIT_CHECK_FAILED if broken else EXIT_PASSED
