"""`killtest explore`: kill once at every request boundary and commit-path line, and check each outcome."""

from __future__ import annotations

import argparse
import json
import os
import shlex

from fixture_site.catalog import build_catalog
from harness.cli.command import EXIT_CHECK_FAILED, EXIT_PASSED, Command
from harness.cli.shared import command_line, prepare_dirs
from harness.design.registry import design_named
from harness.faults.schedule import parse_schedule
from harness.files import write_atomically
from harness.options import options_of, replay_words
from harness.report.render import exploration_markdown
from harness.running.exploration import explore_design
from harness.running.progress import Progress
from harness.running.runner import RunSettings


class ExploreCommand(Command):
    name = "explore"
    help = "kill once at every request boundary and commit-path line"

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        design = design_named(args.design)
        points = list(parse_schedule(args.only, design).points) if args.only else None
        prepare_dirs(args)
        catalog = build_catalog(args.listing_pages, args.per_page)
        settings = RunSettings(lease_s=args.lease, time_limit_s=args.time_limit)
        exploration = explore_design(design, catalog, settings, points, work_dir=args.work_dir,
                                     prefork=not args.no_prefork, progress=progress)
        base = os.path.join(args.out, f"explore-{design.name}")
        write_atomically(f"{base}.json", json.dumps(exploration.to_json(), indent=2) + "\n")
        write_atomically(f"{base}.md", exploration_markdown(exploration, command_line()))
        for outcome in exploration.broken:
            progress.done(f"{outcome.point}: {'; '.join(outcome.problems)}")
        progress.done(f"explore {design.name}: {len(exploration.outcomes)} crash points,"
                      f" {len(exploration.broken)} broken, {exploration.schedules_per_minute} schedules/minute;"
                      f" {base}.{{json,md}}")
        if exploration.broken:
            # Every setting explore shares with replay goes into the line, from the one option table.
            shared = {o.dest for o in options_of("replay") if o.replayed} & {o.dest for o in options_of("explore")}
            same = {dest: getattr(args, dest) for dest in sorted(shared) if dest != "design"}
            replay = replay_words({"design": design.name, "schedule": exploration.broken[0].point, **same})
            progress.done(f"replay the first: {shlex.join(['killtest', 'replay', *replay])}")
        return EXIT_CHECK_FAILED if design.claims_idempotence and exploration.broken else EXIT_PASSED
