"""`killtest replay`: run designs once on one exact schedule, as a failure's replay line printed it.

A store-write point (`w5`) or an `r5+` is first aimed by a recording run on the same site and settings
(harness/running/write_plans.py), so the line replays the same write whatever the directory it is
pasted in.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

from killtest.harness.cli.ci_output import campaign_cases, publish
from killtest.harness.cli.command import EXIT_CHECK_FAILED, EXIT_PASSED, Command
from killtest.harness.cli.plans_from_args import check_points, check_recrawls, replay_plan
from killtest.harness.cli.shared import designs_named, prepare_dirs
from killtest.harness.errors import KilltestError
from killtest.harness.faults.schedule import KillSchedule, parse_schedule
from killtest.harness.report.campaign import Campaign, verdict_words
from killtest.harness.running.campaign_plan import CampaignPlan
from killtest.harness.running.orchestrator import run_campaign, stage
from killtest.harness.running.progress import Progress
from killtest.harness.running.write_plans import needs_recording, resolve_schedule


class ReplayCommand(Command):
    name = "replay"
    help = "run one design once on one schedule, as a failure printed it"

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        designs = designs_named(args.design)
        if args.strict:  # as explore and fuzz judged them (harness/campaigns/exploration.py)
            designs = [design.strict() for design in designs]
        # A bad spec is refused before anything starts; `l:complete+3:2` is in the one design's file.
        schedule = parse_schedule(args.schedule, designs[0] if len(designs) == 1 else None)
        check_recrawls(args, designs)
        check_points(args, [schedule], designs)
        prepare_dirs(args)
        plan = aimed_plan(replay_plan(args, designs, schedule), progress)
        campaign = run_campaign(plan, progress)
        publish(args, "replay", campaign_cases(campaign, "replay"), os.path.join(args.out, "replay.md"))
        for line in off_aim_lines(campaign):
            progress.done(line)
        progress.done(f"results: {os.path.join(args.out, 'replay')}.{{json,md}}"
                      f" — {verdict_words(campaign)}")
        return EXIT_PASSED if campaign.valid else EXIT_CHECK_FAILED


def aimed_plan(plan: CampaignPlan, progress: Progress) -> CampaignPlan:
    """The plan with its store-write and `r5+` points aimed, by a recording on the plan's own site and settings."""
    schedule: KillSchedule = plan.schedules[0]
    if not any(needs_recording(p) for p in schedule.points):
        return plan
    if len(plan.designs) != 1:
        raise KilltestError("store-write and r<n>+ points are aimed at one design's writes:"
                            " replay one design at a time")
    design = plan.designs[0]
    progress.step(f"[{design.name}] recording the store writes to aim {schedule.spec}")
    with stage(plan.catalog, plan.designs, latency_s=plan.latency_s, slow_pages=plan.slow_pages,
               pace_rps=plan.pace_rps, prefork=plan.prefork) as on:
        on.site.set_toxics(plan.toxics, plan.toxic_seed)
        aimed = resolve_schedule(schedule, design, on, plan.settings, work_dir=plan.work_dir)
    return dataclasses.replace(plan, schedules=(aimed,))


def off_aim_lines(campaign: Campaign) -> list[str]:
    """A line per kill that was delivered at a store write other than the one its point names: the kill
    landed (the run is judged on it), but the replay did not reproduce the very write (faults/write_gate.py)."""
    return [f"{v.design} run {v.run}: the kill landed at another store write than the point names ({k['off_aim']})"
            for v in campaign.verdicts for k in v.kill_findings if k.get("off_aim")]
