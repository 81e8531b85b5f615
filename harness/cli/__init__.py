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
import importlib
import importlib.metadata
import signal
import sys
from collections.abc import Iterator, Mapping

from killtest.harness import lifeline
from killtest.harness.cli.command import EXIT_BAD_INPUT, EXIT_INTERRUPTED, Command, OneLineParser
from killtest.harness.errors import KilltestError
from killtest.harness.option_kinds import COMMAND_NAMES
from killtest.harness.running.progress import Progress


class _Commands(Mapping[str, Command]):
    """The commands by name, in the order `killtest --help` lists them (COMMAND_NAMES); each command's module
    (cli/check_recording.py for check-recording) is imported when the command is first asked for. A command line
    builds the parser of its own command only (build_parser): the other modules' imports (bench's, the case tables
    of cases, ...) cost each `python -m killtest run` 0.03-0.09 CPU-s more (0.1-0.18 for serve), and the suite
    and the campaigns start killtest by the hundred."""

    def __init__(self) -> None:
        self._loaded: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self._loaded:
            if name not in COMMAND_NAMES:
                raise KeyError(name)
            module = importlib.import_module(f"{__name__}.{name.replace('-', '_')}")
            [kind] = [kind for kind in vars(module).values() if isinstance(kind, type) and issubclass(kind, Command)
                      and kind.__module__ == module.__name__ and getattr(kind, "name", None) == name]
            self._loaded[name] = kind()
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(COMMAND_NAMES)

    def __len__(self) -> int:
        return len(COMMAND_NAMES)


COMMANDS: Mapping[str, Command] = _Commands()


def installed_version() -> str:
    """The installed distribution's version (pyproject.toml's), or 0+unknown in a tree never installed."""
    try:
        return importlib.metadata.version("killtest")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with `only` (a command's name), of that command alone: the words of a
    command line that starts with it parse to the same namespace, with the same help and the same errors."""
    parser = OneLineParser(prog="killtest", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--version", action="version", version=f"killtest {installed_version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for name in [only] if only is not None else COMMANDS:
        command = COMMANDS[name]
        command.add_options(commands.add_parser(name, help=command.help))
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
        words = sys.argv[1:] if argv is None else argv
        # The first word names the command (killtest's own options, --help and --version, come before it, and
        # then the whole parser is built: its help lists every command).
        args = build_parser(words[0] if words and words[0] in COMMAND_NAMES else None).parse_args(words)
        # What a killtest that died without cleaning up left (its owner is gone); never a live run's.
        lifeline.sweep_dead_temp_dirs([None, getattr(args, "work_dir", None)])
        sys.exit(COMMANDS[args.command].run(args, progress))
    except KilltestError as error:
        progress.done(f"killtest: error: {error}")
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        progress.done("killtest: interrupted; the runs that finished are kept in the results directory")
        sys.exit(EXIT_INTERRUPTED)
