"""`killtest record`: run a design once against its real site through a recording proxy, and make the reference.

The spec's [site] table names the WARC file and the start URL (harness/design/site_spec.py); the
reference records land beside the WARC. Then `killtest run --design SPEC` kill-tests the design,
unchanged, against the replay (harness/running/record_site.py says how). The new WARC is then
scanned for likely secrets (check_recording.py): exit 1 when it holds any.
"""

from __future__ import annotations

import argparse

from killtest.harness.cli.check_recording import report_suspects
from killtest.harness.cli.command import Command
from killtest.harness.cli.shared import designs_named
from killtest.harness.running.progress import Progress
from killtest.harness.running.record_site import record_design


class RecordCommand(Command):
    name = "record"
    help = "record a design's own site once through a proxy (WARC + reference records), to kill-test it against"

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        design = designs_named([args.design])[0]
        made = record_design(design, args.resolve, args.insecure_upstream, args.time_limit, progress.step)
        progress.done(f"recorded {made.exchanges} exchanges into {made.recording} ({made.warc_bytes} bytes);"
                      f" the reference {made.reference} holds {made.records} records from {made.requests} requests"
                      " (two replays agreed)")
        status = report_suspects(made.recording, progress)  # what the masking missed, before anyone commits it
        progress.done(f"next: killtest run --design {design.spec_file} --runs 2 --kills 3")
        return status
