"""`killtest check-recording FILE`: scan a recording for likely secrets before it is committed (issue 27).

One line per suspect, saying where it is (killtest.fixture_site.recordings.secret_scan), in the WARC and in the
reference records beside it (`x.reference.json`); exit 1 when there is any, so CI can run it on the
recordings a repository holds. `killtest record` runs the same scan on the WARC it has just written.
With --out, the suspects are also written as JSON (check-recording.json), each shown as its line
shows it: never a value.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

from killtest.fixture_site.recordings.recorded_site import reference_path
from killtest.fixture_site.recordings.secret_scan import Suspect, scan_recording, scan_reference, unredacted_names
from killtest.harness.cli.command import EXIT_CHECK_FAILED, EXIT_PASSED, Command
from killtest.harness.cli.shared import command_line
from killtest.harness.errors import KilltestError
from killtest.harness.files import write_atomically
from killtest.harness.running.progress import Progress


def report_suspects(path: str, progress: Progress) -> tuple[int, dict[str, list[Suspect]]]:
    """Print the scan of one WARC and of the reference records beside it, if any: the exit status it earns,
    and the suspects by file."""
    reference = reference_path(path)
    try:
        scanned = {path: scan_recording(path)}
        if os.path.exists(reference):  # what the design stored: a URL it keeps may carry a credential
            scanned[reference] = scan_reference(reference, unredacted_names(path))
    except ValueError as error:
        raise KilltestError(str(error)) from None
    for where, found in scanned.items():
        for suspect in found:
            progress.done(suspect.line(where))
    suspects = [suspect for found in scanned.values() for suspect in found]
    if suspects:
        progress.done(f"{path}: {len(suspects)} likely secret(s): mask them ([site] redact_params / redact_headers)"
                      " and record again; [site] unredacted keeps a name on purpose, but a value that looks like a"
                      " token is reported whatever its name")
        return EXIT_CHECK_FAILED, scanned
    progress.done(f"{path}: no likely secret found")
    return EXIT_PASSED, scanned


def suspects_json(scanned: dict[str, list[Suspect]]) -> list[dict]:
    """The suspects as result files hold them: file, record, url (as shown), where, what, hint; never a value."""
    return [{"file": path, **dataclasses.asdict(suspect)} for path, found in scanned.items() for suspect in found]


def write_report(out: str, name: str, report: dict) -> str:
    """`out/name` with `report` as JSON (the folder made if need be); its path."""
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as error:
        raise KilltestError(f"--out {out!r}: cannot create the folder: {error.strerror}") from None
    path = os.path.join(out, name)
    write_atomically(path, json.dumps(report, indent=1) + "\n")
    return path


class CheckRecordingCommand(Command):
    name = "check-recording"
    help = "scan a recording (WARC) for likely secrets: one line per suspect, exit 1 when any"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("file", nargs="+", metavar="FILE", help="the WARC file(s) to scan")
        super().add_options(parser)

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        statuses, scanned = [], {}
        for path in args.file:
            status, found = report_suspects(path, progress)
            statuses.append(status)
            scanned.update(found)
        if args.out is not None:
            report = {"command": command_line(), "scanned": list(scanned), "suspects": suspects_json(scanned)}
            progress.done(f"suspects: {write_report(args.out, 'check-recording.json', report)}")
        return max(statuses)
