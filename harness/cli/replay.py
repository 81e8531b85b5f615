"""`killtest replay`: run designs once on one exact schedule, as a failure's replay line printed it."""

from __future__ import annotations

import argparse
import os

from harness.cli.command import EXIT_CHECK_FAILED, EXIT_PASSED, Command
from harness.cli.plans_from_args import check_points, check_recrawls, replay_plan
from harness.cli.shared import designs_named, prepare_dirs
from harness.faults.schedule import parse_schedule
from harness.running.orchestrator import run_campaign
from harness.running.progress import Progress


class ReplayCommand(Command):
    name = "replay"
    help = "run one design once on one schedule, as a failure printed it"

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        designs = designs_named(args.design)
        schedule = parse_schedule(args.schedule)  # a bad spec is refused before anything starts
        check_recrawls(args, designs)
        check_points(args, [schedule], designs)
        prepare_dirs(args)
        campaign = run_campaign(replay_plan(args, designs, schedule), progress)
        progress.done(f"results: {os.path.join(args.out, 'replay')}.{{json,md}}"
                      f" — {'PASS' if campaign.valid else 'FAIL'}")
        return EXIT_PASSED if campaign.valid else EXIT_CHECK_FAILED
