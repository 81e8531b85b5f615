"""The small base class every `killtest` command stands on, the parser that errs in one line, exit codes.

A command is a name, a one-line help, its options (from the table in harness/options.py) and
`run(args, progress) -> int`, the exit status. harness/cli/__init__.py collects the commands.
"""

from __future__ import annotations

import argparse
from typing import ClassVar, NoReturn

from killtest.harness.errors import KilltestError
from killtest.harness.options import GROUPS, options_of
from killtest.harness.running.progress import Progress

EXIT_PASSED = 0
EXIT_CHECK_FAILED = 1  # a run broke a promise, a verdict was wrong, a design regressed
EXIT_BAD_INPUT = 2  # a KilltestError: a usage or spec mistake, said in one line
EXIT_INTERRUPTED = 130  # Ctrl+C or SIGTERM, as a shell reports a SIGINT


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr, not a usage block."""

    def error(self, message: str) -> NoReturn:
        raise KilltestError(f"{message} (see '{self.prog} --help')")


class Command:
    """One `killtest` command: parse (its options come from the table), call running/, print."""

    name: ClassVar[str]
    help: ClassVar[str]

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """The command's options from harness/options.py, shown in --help by group."""
        groups: dict[str | None, argparse._ActionsContainer] = {None: parser}
        taken = options_of(self.name)
        for title, description in GROUPS.items():
            if any(option.group == title for option in taken):
                groups[title] = parser.add_argument_group(title, description)
        for option in taken:
            groups[option.group].add_argument(option.flag, **option.argparse_keywords())

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        raise NotImplementedError
