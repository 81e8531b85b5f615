"""The docs hold: the README stays short, the generated reference tables match the code, links resolve.

The reference tables in docs/reference/ (findings, named checks, history events, spec keys, CLI
options) are rendered from the code by harness/report/reference.py; a table that differs from what
the code renders now fails here, and `python -m killtest.harness.report.reference --write` (`make docs`)
brings it back in line.
"""

from __future__ import annotations

import ast
import os
import re

import pytest

from killtest.harness.history import EVENTS
from killtest.harness.report import reference

ROOT = reference.PROJECT_ROOT
README = os.path.join(ROOT, "README.md")
README_MOST_LINES = 160
# An inline Markdown link or image: [text](target) — the target up to a space, a quote or the closing ")".
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = ("http://", "https://", "mailto:")


def _pages() -> list[str]:
    return reference.markdown_files(ROOT)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as src:
        return src.read()


def _without_code(text: str) -> str:
    """The page without fenced code blocks and inline code: a `[x](y)` there is not a link."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def test_the_readme_is_short():
    lines = _read(README).count("\n")
    assert lines <= README_MOST_LINES, f"README.md has {lines} lines; keep it under {README_MOST_LINES} and move" \
                                       " the rest to docs/ (tutorial, how-to, reference, explanation)"


def test_the_readme_names_the_two_commands():
    text = _read(README)
    assert "make killtest" in text and "make test" in text


@pytest.mark.parametrize("page,name", [(os.path.relpath(page, ROOT), name) for page in _pages()
                                       for name, _ in reference.blocks(_read(page))])
def test_a_generated_reference_table_matches_the_code(page, name):
    [body] = [body for block_name, body in reference.blocks(_read(os.path.join(ROOT, page))) if block_name == name]
    assert body == reference.render(name), f"{page}: the generated table {name!r} differs from the code;" \
                                           f" run `{reference.WRITE_COMMAND}` (make docs)"


def test_every_generated_table_is_in_the_docs():
    placed = {name for page in _pages() for name, _ in reference.blocks(_read(page))}
    assert set(reference.TABLES) <= placed, f"tables rendered but shown nowhere: {set(reference.TABLES) - placed}"


@pytest.mark.parametrize("page", [os.path.relpath(page, ROOT) for page in _pages()])
def test_every_relative_link_points_to_an_existing_file(page):
    path = os.path.join(ROOT, page)
    broken = []
    for target in LINK.findall(_without_code(_read(path))):
        if target.startswith(EXTERNAL):
            continue
        file_part, _, anchor = target.partition("#")
        linked = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(linked):
            broken.append(target)
        elif anchor and linked.endswith(".md") and anchor not in _anchors(linked):
            broken.append(target)
    assert not broken, f"{page} links to files or headings that do not exist: {broken}"


def _anchors(path: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+\s+(.*?)\s*$", re.sub(r"^```.*?^```", "", _read(path), flags=re.S | re.M), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def _events_written(path: str) -> set[str]:
    """Event types a module adds to a history: `history.add("name", ...)`, or a name chosen just before."""
    tree = ast.parse(_read(path))
    names: set[str] = set()
    strings_of: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            # `kind = "side_request" if ... else "request"`: only a string or a choice between strings.
            choices = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            strings_of.setdefault(node.targets[0].id, set()).update(
                c.value for c in choices if isinstance(c, ast.Constant) and isinstance(c.value, str))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add"
                and node.args):
            continue
        owner = node.func.value
        owner_name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        if "history" not in owner_name:
            continue
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            names.add(first.value)
        elif isinstance(first, ast.Name):
            names |= strings_of.get(first.id, set())
    return names


def test_every_history_event_the_harness_writes_is_described():
    written: dict[str, str] = {}
    for folder, _, files in os.walk(os.path.join(ROOT, "harness")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                for event in _events_written(path):
                    written.setdefault(event, os.path.relpath(path, ROOT))
    assert {"run_started", "kill", "request", "run_finished"} <= set(written), "the scan found no history writes"
    missing = {event: where for event, where in written.items() if event not in EVENTS}
    assert not missing, f"history events written but not in killtest.harness.history.EVENTS (and so not in" \
                        f" docs/reference/history.md): {missing}"
