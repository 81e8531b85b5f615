"""`killtest zoo`: run the bug zoo; every known mistake must be flagged, and the reference design not."""

from __future__ import annotations

import argparse
import json
import os

from killtest.harness.campaigns.zoo_runs import run_zoo
from killtest.harness.cli.ci_output import publish, zoo_cases
from killtest.harness.cli.command import EXIT_CHECK_FAILED, EXIT_PASSED, Command
from killtest.harness.cli.shared import command_line, prepare_dirs
from killtest.harness.faults.zoo_scenarios import selected, zoo_entries
from killtest.harness.files import write_atomically
from killtest.harness.report.zoo_table import zoo_markdown
from killtest.harness.running.progress import Progress


class ZooCommand(Command):
    name = "zoo"
    help = "run the bug zoo: every known mistake must be flagged, the control not"

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        entries = selected(zoo_entries(), args.only)
        prepare_dirs(args)
        outcomes = run_zoo(entries, args.work_dir, on_progress=progress.step)
        write_atomically(os.path.join(args.out, "zoo.json"),
                         json.dumps({"command": command_line(), "outcomes": [o.to_json() for o in outcomes]},
                                    indent=2) + "\n")
        write_atomically(os.path.join(args.out, "zoo.md"), zoo_markdown(outcomes, command_line()))
        publish(args, "zoo", zoo_cases(outcomes), os.path.join(args.out, "zoo.md"))
        for o in outcomes:
            found = ", ".join(o.findings) or "nothing"
            control = "clean" if o.control_clean else ", ".join(o.control_findings)
            progress.done(f"{o.design}: expected {o.expect}, found {found}; control {control}:"
                          f" {'right' if o.as_expected else 'WRONG'}")
            for problem in o.control_problems:  # what broke in the correct design, in its own words
                progress.done(f"  control: {problem}")
        wrong = [o for o in outcomes if not o.as_expected]
        progress.done(f"zoo: {len(outcomes) - len(wrong)} of {len(outcomes)} verdicts right;"
                      f" {os.path.join(args.out, 'zoo')}.{{json,md}}")
        return EXIT_CHECK_FAILED if wrong else EXIT_PASSED
