"""The `killtest` command line: run, replay, explore and zoo kill-test designs; scale, bench and calibrate measure.

The room's rule: one module per command, each a `Command` (harness/cli/command.py) with a name, a
one-line help, its options and `run(args, progress) -> int`. A command parses, calls running/ (or
bench/), and prints; it holds no logic of its own beyond that. Its options come from the one table
in harness/options.py, with their defaults from harness/defaults.py; what several commands share
(designs from --design, the results directories, plans from options) is in shared.py and
plans_from_args.py. Exit status: 0 passed, 1 a check failed, 2 bad input (one line), 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import signal
import sys

from killtest.harness import lifeline
from killtest.harness.cli.bench import BenchCommand
from killtest.harness.cli.calibrate import CalibrateCommand
from killtest.harness.cli.cases import CasesCommand
from killtest.harness.cli.check_recording import CheckRecordingCommand
from killtest.harness.cli.command import EXIT_BAD_INPUT, EXIT_INTERRUPTED, Command, OneLineParser
from killtest.harness.cli.envs import EnvsCommand
from killtest.harness.cli.explore import ExploreCommand
from killtest.harness.cli.fuzz import FuzzCommand
from killtest.harness.cli.record import RecordCommand
from killtest.harness.cli.replay import ReplayCommand
from killtest.harness.cli.run import RunCommand
from killtest.harness.cli.scale import ScaleCommand
from killtest.harness.cli.serve import ServeCommand
from killtest.harness.cli.zoo import ZooCommand
from killtest.harness.errors import KilltestError
from killtest.harness.running.progress import Progress

# In the order `killtest --help` lists them.
COMMANDS: dict[str, Command] = {command.name: command for command in (
    RunCommand(), ReplayCommand(), ExploreCommand(), FuzzCommand(), ZooCommand(), ScaleCommand(), BenchCommand(),
    CalibrateCommand(), RecordCommand(), ServeCommand(), CheckRecordingCommand(), CasesCommand(), EnvsCommand())}


def installed_version() -> str:
    """The installed distribution's version (pyproject.toml's), or 0+unknown in a tree never installed."""
    try:
        return importlib.metadata.version("killtest")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="killtest", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--version", action="version", version=f"killtest {installed_version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for command in COMMANDS.values():
        command.add_options(commands.add_parser(command.name, help=command.help))
    return parser


def _raise_interrupt(signum, frame):
    # Once: a second Ctrl+C or SIGTERM (a shell and a supervisor both passing one on) must not cut
    # short the cleanup the first one started, or a scraper or a temporary directory is left behind.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    progress = Progress()
    # SIGTERM takes the same road as Ctrl+C, so every scraper is killed and every temp dir removed.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGINT, _raise_interrupt)
    try:
        args = build_parser().parse_args(argv)
        # What a killtest that died without cleaning up left (its owner is gone); never a live run's.
        lifeline.sweep_dead_temp_dirs([None, getattr(args, "work_dir", None)])
        sys.exit(COMMANDS[args.command].run(args, progress))
    except KilltestError as error:
        progress.done(f"killtest: error: {error}")
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        progress.done("killtest: interrupted; the runs that finished are kept in the results directory")
        sys.exit(EXIT_INTERRUPTED)
