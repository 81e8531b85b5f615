"""`killtest record`: run a design once against its real site through a recording proxy, and make the reference.

The spec's [site] table names the WARC file and the start URL (harness/design/site_spec.py); the
reference records land beside the WARC. Then `killtest run --design SPEC` kill-tests the design,
unchanged, against the replay (harness/campaigns/record_site.py says how). The new WARC is then
scanned for likely secrets (check_recording.py): exit 1 when it holds any. With --out, what was made
is also written as record.json and record.md: sizes and counts, what changed, the scan's suspects.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

from killtest.harness.campaigns.record_site import Recorded, record_design
from killtest.harness.cli.check_recording import report_suspects, suspects_json, write_report
from killtest.harness.cli.command import Command
from killtest.harness.cli.shared import command_line, designs_named
from killtest.harness.files import write_atomically
from killtest.harness.running.progress import Progress


class RecordCommand(Command):
    name = "record"
    help = "record a design's own site once through a proxy (WARC + reference records), to kill-test it against"

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        design = designs_named([args.design])[0]
        made = record_design(design, args.resolve, args.insecure_upstream, args.time_limit, progress.step)
        progress.done(f"recorded {made.exchanges} exchanges ({made.pages} distinct requests; {made.revisits} answers"
                      f" kept as revisit records of a payload stored once) into {made.recording} ({made.warc_bytes}"
                      " bytes);"
                      f" the reference {made.reference} holds {made.records} records from {made.requests} requests"
                      " (two replays agreed)")
        status, scanned = report_suspects(made.recording, progress)  # what the masking missed, before a commit
        if args.out is not None:
            report = {"command": command_line(), **dataclasses.asdict(made), "suspects": suspects_json(scanned)}
            path = write_report(args.out, "record.json", report)
            write_atomically(os.path.join(args.out, "record.md"), record_markdown(made, len(report["suspects"])))
            progress.done(f"report: {path[:-len('.json')]}.{{json,md}}")
        progress.done(f"next: killtest run --design {design.spec_file} --runs 2 --kills 3")
        return status


def record_markdown(made: Recorded, suspects: int) -> str:
    rows = [("WARC", f"`{made.recording}`"), ("size", f"{made.warc_bytes:,} bytes"),
            ("exchanges", f"{made.exchanges} ({made.pages} distinct requests)"),
            ("revisit records", f"{made.revisits} (answers whose payload was stored already)"),
            ("reference", f"`{made.reference}`: {made.records} records from {made.requests} requests"),
            ("recording run", f"{made.record_s:g} s"),
            ("likely secrets", f"{suspects}" + (" (see `killtest check-recording`)" if suspects else ""))]
    if made.changes is not None:
        rows += [(f"against the old recording, {line.split(':', 1)[0]}", line.split(": ", 1)[1])
                 for line in made.changes.lines()]
    return "# killtest record\n\n| | |\n| --- | --- |\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)
