"""What several commands need: designs from --design, the results directories, lists of counts, the command line."""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from killtest.harness.design.model import Design
from killtest.harness.design.registry import built_in_designs, design_named
from killtest.harness.errors import KilltestError


def designs_named(names: list[str]) -> list[Design]:
    """The designs of a repeatable, comma-joinable --design, each once, in the order given."""
    wanted = [n.strip() for joined in names for n in joined.split(",") if n.strip()]
    if not wanted:
        raise KilltestError("--design needs at least one design name")
    return [design_named(n) for n in dict.fromkeys(wanted)]


def control_design() -> Design:
    """The built-in control: the design whose spec says `control = true` (the article's naive scraper)."""
    controls = [design for design in built_in_designs().values() if design.control]
    if len(controls) != 1:
        raise KilltestError(f"expected one built-in control design, found {len(controls)}")
    return controls[0]


def prepare_dirs(args: argparse.Namespace) -> None:
    """Refuse a --work-dir that is not there; make --out (its history/ folder is made by the campaigns that write
    histories in it, so explore and fuzz leave none)."""
    if args.work_dir is not None and not os.path.isdir(args.work_dir):
        raise KilltestError(f"--work-dir {args.work_dir!r} does not exist; create it or leave the option out")
    junit = getattr(args, "junit_xml", None)
    if junit is not None:  # its folder is made, as pytest's --junitxml makes it; a path that cannot be is refused now
        try:
            os.makedirs(os.path.dirname(os.path.abspath(junit)), exist_ok=True)
        except OSError as error:
            raise KilltestError(f"--junit-xml {junit!r}: cannot create its folder: {error.strerror}") from None
        if os.path.isdir(junit):
            raise KilltestError(f"--junit-xml {junit!r} is a folder; give the path of the file to write")
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as error:
        raise KilltestError(f"cannot create the results directory {args.out!r}: {error.strerror}") from None


def counts(text: str, option: str, what: str, example: str) -> list[int]:
    """A comma-joined list of whole numbers of 1 or more, or a one-line error naming the option."""
    try:
        numbers = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        numbers = []
    if not numbers or min(numbers) < 1:
        raise KilltestError(f"{option} takes comma-joined {what} of 1 or more, for example {example}, not {text!r}")
    return numbers


def command_line() -> str:
    """The command as the user typed it, for the result files."""
    return shlex.join(["killtest", *sys.argv[1:]])
