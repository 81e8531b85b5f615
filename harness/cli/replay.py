"""`killtest replay`: run designs once on one exact schedule, as a failure's replay line printed it.

A store-write point (`w5`) or an `r5+` is first aimed by a recording run on the same site and settings
(harness/running/write_plans.py), so the line replays the same write whatever the directory it is
pasted in.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

from killtest.harness.check.findings import Finding
from killtest.harness.cli.ci_output import campaign_cases, publish
from killtest.harness.cli.command import EXIT_CHECK_FAILED, EXIT_PASSED, Command
from killtest.harness.cli.explore import exact
from killtest.harness.cli.plans_from_args import check_points, check_recrawls, replay_plan
from killtest.harness.cli.shared import designs_named, prepare_dirs
from killtest.harness.errors import KilltestError
from killtest.harness.faults.file_roles import off_aim_words, store_path
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
        expected = expected_findings(args.expect)
        prepare_dirs(args)
        plan = aimed_plan(replay_plan(args, designs, schedule), progress)
        campaign = run_campaign(plan, progress)
        publish(args, "replay", campaign_cases(campaign, "replay"), os.path.join(args.out, "replay.md"))
        for line in off_aim_lines(campaign, {d.name: store_path(d.store.path) for d in designs}):
            progress.done(line)
        for line in reproduced_lines(campaign, expected, schedule.spec):
            progress.done(line)
        progress.done(f"results: {os.path.join(args.out, 'replay')}.{{json,md}}"
                      f" — {verdict_words(campaign)}")
        return EXIT_PASSED if campaign.valid else EXIT_CHECK_FAILED


def expected_findings(text: str | None) -> tuple[str, ...] | None:
    """--expect's finding codes, each known (check/findings.py); None when the line gave none."""
    if not text:
        return None
    codes = tuple(code.strip() for code in text.split(",") if code.strip())
    unknown = [code for code in codes if code not in {finding.value for finding in Finding}]
    if unknown:
        raise KilltestError(f"--expect {text}: {', '.join(unknown)} is no finding's code (docs/reference/findings.md"
                            " lists them); give the codes a failure's replay line printed")
    return codes


def reproduced_lines(campaign: Campaign, expected: tuple[str, ...] | None, schedule: str) -> list[str]:
    """Whether each run found what the line was printed for (--expect): the same findings, the same crash. When
    it did not, why: a timed kill lands wherever the crawl happens to be (and where it landed this time, as exact
    points), no kill landed, a kill off its write, or, on exact points, the crawler itself behaving otherwise."""
    if expected is None:
        return []
    lines = []
    for v in campaign.verdicts:
        found = tuple(code for code in v.findings if code != Finding.NO_KILL_LANDED.value)
        label = f"{v.design} run {v.run}" if len(campaign.verdicts) > 1 else "replay"
        if set(expected) <= set(found):  # every finding it was printed for; more is said, not a failure to reproduce
            crash = ", the same crash" if Finding.CRASHED.value in expected else ""
            more = [code for code in found if code not in expected]
            also = f"; and also {', '.join(more)}" if more else ""
            lines.append(f"{label}: reproduced: the same findings ({', '.join(expected)}){crash}{also}")
            continue
        lines.append(f"{label}: NOT reproduced: the line was printed for {', '.join(expected)}; this replay found"
                     f" {', '.join(found) or 'nothing broken'} ({_differ(expected, found)}): {_why(v, schedule)}")
    return lines


def _differ(expected: tuple[str, ...], found: tuple[str, ...]) -> str:
    missing = [code for code in expected if code not in found]
    more = [code for code in found if code not in expected]
    return "; ".join(part for part in (f"no {', '.join(missing)}" if missing else "",
                                        f"also {', '.join(more)}" if more else "") if part)


def _why(v, schedule: str) -> str:
    if v.proved_nothing:
        return "no kill landed on a start at work, so the run proved nothing"
    if not exact(schedule):
        landed = f"; this time they landed at {v.landed_schedule} (--schedule {v.landed_schedule})" \
            if v.landed_schedule else ""
        return ("its kills are timed, and a timed kill lands wherever the crawl happens to be at that moment, so"
                f" its replay is not exact{landed}; the failure's exact line replays where its kills landed")
    if any(k.get("off_aim") for k in v.kill_findings):
        return "a store-write kill landed at another write than its point names (the recording's aim was off)"
    return ("its points are exact, so the crawler itself behaved otherwise this time (threads, its clock, or state"
            " outside the work dir decide what it does)")


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


def off_aim_lines(campaign: Campaign, stores: dict[str, str] | None = None) -> list[str]:
    """A line per kill that was delivered at a store write other than the one its point names: the kill
    landed (the run is judged on it), but the replay did not reproduce the very write (faults/write_gate.py), in
    plain words (faults/file_roles.off_aim_words; `stores`: each design's store path, to name the files)."""
    return [f"{v.design} run {v.run}: the kill landed at another write than the point names:"
            f" {off_aim_words(k['off_aim'], (stores or {}).get(v.design, ''))}"
            for v in campaign.verdicts for k in v.kill_findings if k.get("off_aim")]
