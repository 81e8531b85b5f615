"""The reference tables of docs/reference/, rendered from the code so that they cannot drift from it.

Each table sits in a Markdown file between `<!-- generated: NAME -->` and `<!-- end generated -->`;
the prose around it is written by hand. `python -m killtest.harness.report.reference --write` (`make docs`)
rewrites every block; `--check` exits 1 naming the stale ones, as tests/test_docs.py does.

The sources: findings from `killtest.harness.check.findings.Finding`, the named checks from
`killtest.harness.check.named_checks.CHECKS`, history events from
`killtest.harness.history.EVENTS`, spec keys from `killtest.harness.design.specfile.SPEC_KEYS`, command-line options
from `killtest.harness.options.OPTIONS`. Each is imported when its table is rendered, so one missing source
names itself instead of hiding the others.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from killtest.harness.errors import KilltestError

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WRITE_COMMAND = "python -m killtest.harness.report.reference --write"
BLOCK = re.compile(r"(?P<open><!-- generated: (?P<name>[a-z-]+) -->\n)(?P<body>.*?)(?P<close><!-- end generated -->)",
                   re.S)


def _cell(value: object) -> str:
    """One Markdown table cell: a pipe would end the cell, a newline the row, and `<hit>` outside a code
    span would be read as an HTML tag."""
    pieces = " ".join(str(value).split()).replace("|", "\\|").split("`")
    return "`".join(piece if inside % 2 else piece.replace("<", "&lt;").replace(">", "&gt;")
                    for inside, piece in enumerate(pieces))


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def findings_table() -> str:
    """Every finding a run can report: its code (in killtest.json) and what happened."""
    from killtest.harness.check.findings import Finding

    def promise(finding: object) -> str:
        broken = getattr(finding, "promise", None)
        return str(getattr(broken, "value", broken or ""))

    return _table(["code", "promise broken", "what happened"],
                  ((f"`{finding.value}`", promise(finding), finding.description) for finding in Finding))


def history_events_table() -> str:
    """Every event type of a run's history and the fields it carries besides `type` and `t`."""
    from killtest.harness.history import EVENTS

    return _table(["event", "fields"], ((f"`{name}`", fields) for name, fields in EVENTS.items()))


def spec_keys_table() -> str:
    """Every key a design spec may set, as `section.key` (a top-level key alone), the [zoo] keys last."""
    from killtest.harness.design.specfile import SPEC_KEYS

    rows = []
    for section, keys in SPEC_KEYS.items():
        for key, description in keys.items():
            top_level = section in ("", None, "top", "top-level")
            rows.append((f"`{key}`" if top_level else f"`{section}.{key}`", description))
    # A zoo design's [zoo] table: its keys live with the options they set (killtest.harness.options).
    from killtest.harness.options import ZOO_KEYS

    rows += [(f"`zoo.{key}`", description) for key, description in ZOO_KEYS.items()]
    return _table(["key", "meaning"], rows)


def _help_text(option: object) -> str:
    """The option's help, with its default when the help does not say it already."""
    text = str(getattr(option, "help", ""))
    default = getattr(option, "default", None)
    if "default" not in text and default not in (None, False, (), []):
        shown = ",".join(map(str, default)) if isinstance(default, (tuple, list)) else default
        text = f"{text} (default {shown})"
    zoo_key = getattr(option, "zoo_key", None)
    return f"{text}; a zoo spec sets it with [zoo] {zoo_key}" if zoo_key else text


def _option_row(option: Any) -> tuple[str, str, str]:
    flag, metavar = option.flag, getattr(option, "metavar", None)
    commands = getattr(option, "commands", ())
    commands = [commands] if isinstance(commands, str) else list(commands)
    repeatable = " (repeatable)" if getattr(option, "action", None) == "append" else ""
    required = " (required)" if getattr(option, "required", False) else ""
    return (f"`{flag} {metavar}`" if metavar else f"`{flag}`", ", ".join(f"`{c}`" for c in commands),
            _help_text(option) + repeatable + required)


def cli_options_table() -> str:
    """Every command-line option, one table per --help group: the commands taking it and what it sets.

    A flag that means something else to another command (bench's --runs) is a row of its own.
    """
    from killtest.harness import options

    groups = {None: "each command's own options", **getattr(options, "GROUPS", {})}
    parts = []
    for group, title in groups.items():
        rows = [_option_row(option) for option in options.OPTIONS if getattr(option, "group", None) == group]
        if rows:
            header = ["option", "commands", "what it sets"]
            parts.append(f"**{group or 'command'}**: {title}\n\n" + _table(header, rows))
    return "\n".join(parts)


def checks_table() -> str:
    """The named checks a run's verdict is composed of, in the order they run, each with its docstring."""
    from killtest.harness.check.named_checks import CHECKS

    return _table(["check", "what it holds"], ((f"`{name}`", (check.__doc__ or "").strip()) for name, check in CHECKS))


def promises_table() -> str:
    """Every promise a design is held to by default, and whether a spec's does_not_promise may waive it."""
    from killtest.harness.promises import MEANING, NOT_WAIVABLE, Promise

    return _table(["promise", "a design that keeps it", "waivable"],
                  ((f"`{p.value}`", MEANING[p], "no" if p in NOT_WAIVABLE else "yes") for p in Promise))


def case_keys_table() -> str:
    """Every key of a case.toml (scrapers/cases/<case>/case.toml): [case]'s, then each [[release]]'s."""
    from killtest.harness.design.case_spec import CASE_KEYS, RELEASE_KEYS

    return _table(["key", "meaning"], [(f"`case.{k}`", v) for k, v in CASE_KEYS.items()]
                  + [(f"`release.{k}`", v) for k, v in RELEASE_KEYS.items()])


TABLES: dict[str, Callable[[], str]] = {
    "promises": promises_table,
    "findings": findings_table,
    "history-events": history_events_table,
    "spec-keys": spec_keys_table,
    "cli-options": cli_options_table,
    "checks": checks_table,
    "case-keys": case_keys_table,
}


def markdown_files(root: str = PROJECT_ROOT) -> list[str]:
    """README.md and every page under docs/: where generated blocks and relative links may be."""
    pages = sorted(glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))
    readme = os.path.join(root, "README.md")
    return ([readme] if os.path.exists(readme) else []) + pages


def blocks(text: str) -> list[tuple[str, str]]:
    """(name, body) of each generated block in a page, in order."""
    return [(match["name"], match["body"]) for match in BLOCK.finditer(text)]


def render(name: str) -> str:
    if name not in TABLES:
        raise KilltestError(f"generated block {name!r} is not one of {', '.join(TABLES)}")
    return TABLES[name]()


def rewritten(text: str) -> str:
    """The page with every generated block replaced by what the code renders now."""
    return BLOCK.sub(lambda match: match["open"] + render(match["name"]) + match["close"], text)


def stale_blocks(root: str = PROJECT_ROOT) -> list[tuple[str, str]]:
    """(page, block name) of every generated block that differs from what the code renders now."""
    stale = []
    for path in markdown_files(root):
        with open(path, encoding="utf-8") as src:
            for name, body in blocks(src.read()):
                if body != render(name):
                    stale.append((os.path.relpath(path, root), name))
    return stale


def write_all(root: str = PROJECT_ROOT) -> list[str]:
    """Rewrite every generated block; the pages that changed, relative to root."""
    changed = []
    for path in markdown_files(root):
        with open(path, encoding="utf-8") as src:
            text = src.read()
        new_text = rewritten(text)
        if new_text != text:
            with open(path, "w", encoding="utf-8") as out:
                out.write(new_text)
            changed.append(os.path.relpath(path, root))
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m killtest.harness.report.reference",
                                     description="render the generated reference tables of docs/ from the code")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="rewrite every generated block in README.md and docs/")
    action.add_argument("--check", action="store_true", help="exit 1 when a generated block differs from the code")
    parser.add_argument("--table", choices=sorted(TABLES), help="print one table to stdout")
    parser.add_argument("--root", default=PROJECT_ROOT, help="the project directory (default: this checkout)")
    args = parser.parse_args(argv)
    try:
        if args.write:
            for page in write_all(args.root):
                print(f"rewrote {page}")
            return 0
        if args.check:
            stale = stale_blocks(args.root)
            for page, name in stale:
                print(f"{page}: generated block {name!r} differs from the code; run {WRITE_COMMAND}",
                      file=sys.stderr)
            return 1 if stale else 0
        for name in [args.table] if args.table else list(TABLES):
            print(render(name))
        return 0
    except KilltestError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
