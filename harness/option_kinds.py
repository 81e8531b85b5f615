"""What an option of the table is: the `Option` record, the --help groups and the types it parses: numbers, and
the supervisor's wait between a kill and the next start (`RestartDelay`, --restart-delay).

harness/options.py holds the table itself; this module holds the kinds it is made of, so the table can
grow without the module that defines a row growing with it.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from killtest.harness import defaults

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
        # An empty value, or one that says "the default" by being false (a RestartDelay of 0): nothing to repeat.
        if value is None or value is False or (not isinstance(value, (int, float)) and not value):
            return []
        if value is True:
            return [self.flag]
        if isinstance(value, (list, tuple)):
            return [word for item in value for word in (self.flag, _text(item))]
        return [self.flag, _text(value)]


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


_BACKOFF = "backoff"


@dataclass(frozen=True)
class RestartDelay:
    """What a supervisor waits between a kill and the next start: `base_s` every time (systemd's RestartSec=), or,
    with `cap_s`, a back-off (Kubernetes' CrashLoopBackOff, harness/defaults.py): `base_s`, doubling at each restart,
    capped at `cap_s`, and back to `base_s` after a start that ran RESTART_BACKOFF_RESET_S before its kill.

    False when it is 0 (restart at once, the default), so a replay line leaves it out; `str()` is the option's
    text, which `parse_restart_delay` reads back to an equal value."""

    base_s: float = defaults.RESTART_DELAY_S
    cap_s: float | None = None  # None: a fixed delay

    def __bool__(self) -> bool:
        return self.base_s > 0

    def __str__(self) -> str:
        if self.cap_s is None:
            return _seconds(self.base_s)
        if (self.base_s, self.cap_s) == (defaults.RESTART_BACKOFF_BASE_S, defaults.RESTART_BACKOFF_CAP_S):
            return _BACKOFF
        return f"{_BACKOFF}:{_seconds(self.base_s)}:{_seconds(self.cap_s)}"

    def seconds(self, restart: int) -> float:
        """The wait before restart number `restart` of a back-off (1, 2, 3 ...: 10, 20, 40 ... capped at 300)."""
        if self.cap_s is None:
            return self.base_s
        return min(self.cap_s, self.base_s * 2.0 ** min(restart - 1, 64))  # 2**64 x any base is past any cap

    def words(self) -> str:
        """The delay in a sentence: `12s`, `a back-off from 10s, doubling, capped at 300s`."""
        if self.cap_s is None:
            return f"{_seconds(self.base_s)}s"
        return f"a back-off from {_seconds(self.base_s)}s, doubling, capped at {_seconds(self.cap_s)}s"


def parse_restart_delay(text: str) -> RestartDelay:
    """An argparse type: --restart-delay's `12` (seconds, fixed), `backoff` or `backoff:BASE:CAP`."""
    parts = str(text).strip().split(":")
    try:
        if parts[0] == _BACKOFF and len(parts) in (1, 3):
            base, cap = ((defaults.RESTART_BACKOFF_BASE_S, defaults.RESTART_BACKOFF_CAP_S) if len(parts) == 1
                         else (float(parts[1]), float(parts[2])))
            if math.isfinite(cap) and 0 < base <= cap:
                return RestartDelay(base, cap)
        elif len(parts) == 1:
            seconds = float(parts[0])
            if math.isfinite(seconds) and seconds >= 0:
                return RestartDelay(seconds)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(
        f"expected seconds (12), {_BACKOFF} (10s doubling, capped at 300s) or {_BACKOFF}:BASE:CAP with"
        f" 0 < BASE <= CAP (for example {_BACKOFF}:5:60), not {text!r}")


def _seconds(value: float) -> str:
    """Seconds as short as they read back exactly: 12, 0.5, 1234567.5 (`:g` would round it)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))
