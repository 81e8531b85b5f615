"""What an option of the table is: the `Option` record, the --help groups and the number types it parses.

harness/options.py holds the table itself; this module holds the kinds it is made of, so the table can
grow without the module that defines a row growing with it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

COMMAND_NAMES = ("run", "replay", "explore", "fuzz", "zoo", "scale", "bench", "calibrate", "record", "serve",
                 "check-recording", "cases", "envs")

# The --help groups, in the order --help shows them: title -> what they hold.
GROUPS = {
    "campaign": "how many runs, how many kills and where they land",
    "scenario": "what each run of a design meets",
    "site": "the fixture site: its catalog, its pace and its faults",
    "checks": "what else fails a run or warns about it",
    "baseline": "compare with a saved campaign",
    "peers": "the peer table: other designs under the same kills",
    "catalog scaling": "one design on catalogs up to 100,000 products",
    "results": "where the results go and what they hold",
}


def positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type: a number of `kind` above zero."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be more than zero, not {text}")
        return value
    return parse


def not_negative(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type: a number of `kind`, zero or more."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"must be zero or more, not {text}")
        return value
    return parse


@dataclass(frozen=True)
class Option:
    """One flag as a set of commands takes it."""

    flag: str
    help: str
    commands: tuple[str, ...]
    group: str | None = None  # a key of GROUPS; None: among the command's own options
    type: Callable[[str], Any] | None = None  # parses and checks the text; None keeps it a string
    default: Any = None
    action: str | None = None  # "append" (repeatable) or "store_true" (a switch)
    required: bool = False
    metavar: str | None = None
    zoo_key: str | None = None  # the key of a spec's [zoo] table that sets it
    replayed: bool = False  # a replay line repeats it: it is a setting of the run being replayed

    def __post_init__(self) -> None:
        if self.action == "store_true":  # a switch is off unless given
            object.__setattr__(self, "default", False)

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def argparse_keywords(self) -> dict[str, Any]:
        """The keywords of `add_argument` for this option."""
        keywords: dict[str, Any] = {"help": self.help, "dest": self.dest}
        if self.action == "store_true":
            return {**keywords, "action": "store_true", "default": False}
        if self.action is not None:
            keywords["action"] = self.action
        if self.required:
            keywords["required"] = True
        else:  # a repeatable option's default is a fresh list argparse appends to
            keywords["default"] = list(self.default) if isinstance(self.default, tuple) else self.default
        if self.type is not None:
            keywords["type"] = self.type
        if self.metavar is not None:
            keywords["metavar"] = self.metavar
        return keywords

    def words(self, value: Any) -> list[str]:
        """This option on a command line with `value`; nothing for None, False or an empty value."""
        if value is None or value is False or (isinstance(value, (str, list, tuple)) and not value):
            return []
        if value is True:
            return [self.flag]
        if isinstance(value, (list, tuple)):
            return [word for item in value for word in (self.flag, _text(item))]
        return [self.flag, _text(value)]


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
