"""Every file a command writes is named where a user looks for it: on its results line, and in the
reference pages' tables of what each command writes (docs/reference/cli.md, docs/reference/results.md).

Real commands on a small catalog; the folder they wrote is listed and compared with what they say.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

import pytest

from killtest.harness.design.model import PROJECT_ROOT

SMALL = ["--listing-pages", "2", "--per-page", "3"]


def killtest(*args: str, cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "killtest", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def expanded(pattern: str) -> set[str]:
    """`a.{json,md}` -> {a.json, a.md}: the shell's brace expansion, one pair of braces."""
    found = re.search(r"\{([^}]*)\}", pattern)
    if not found:
        return {pattern}
    return {pattern[:found.start()] + word + pattern[found.end():] for word in found[1].split(",")}


def written(out) -> set[str]:
    """The folder's top level: files by name, folders with a trailing slash (an empty one too: a folder a
    command leaves empty is one it did not need, and one the reference pages cannot name)."""
    return {entry.name + ("/" if entry.is_dir() else "") for entry in out.iterdir()}


def documented(page: str, command: str, design: str) -> set[str]:
    """What a reference page's table row for `command` says it writes, DESIGN filled in, OUT/ dropped."""
    text = open(os.path.join(PROJECT_ROOT, "docs", "reference", page), encoding="utf-8").read()
    row = next(line for line in text.splitlines() if re.match(rf"\| `(killtest )?{command}` \|", line))
    cell = row.rstrip(" |").rsplit(" | ", 1)[-1]
    names = set()
    for pattern in re.findall(r"`([^`]+)`", cell):
        if "DESIGN" not in pattern and not pattern.endswith("/"):
            continue  # a JSON key or an option the cell mentions, not a file
        names |= expanded(pattern.removeprefix("OUT/").replace("DESIGN", design))
    return names


@pytest.mark.slow
def test_run_names_every_file_it_writes_on_its_results_line(tmp_path):
    out = tmp_path / "out"
    done = killtest("run", "--design", "idempotent", "--runs", "1", "--schedule", "r3", *SMALL, "--out", str(out),
                    cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(text for text in done.stderr.splitlines() if text.startswith("results: "))
    named = expanded(line.removeprefix("results: ").split(" — ")[0])
    assert {os.path.join(out, name) for name in written(out) if name.startswith("killtest.")} == named
    assert os.path.join(out, "killtest.html") in named  # the triage page, with plots or without
    assert "<h2>No run broke a promise</h2>" in (out / "killtest.html").read_text()


@pytest.mark.slow
def test_explore_and_fuzz_write_what_the_reference_pages_say(tmp_path):
    explored = tmp_path / "explore"
    done = killtest("explore", "--design", "idempotent", "--only", "r2", *SMALL, "-j", "1", "--out", str(explored),
                    cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    files = written(explored)
    line = next(text for text in done.stderr.splitlines() if text.startswith("explore idempotent: "))
    assert {os.path.basename(name) for name in expanded(line.rsplit("; ", 1)[1])} == files
    assert documented("cli.md", "explore", "idempotent") == files
    assert documented("results.md", "explore", "idempotent") == files

    fuzzed = tmp_path / "fuzz"
    done = killtest("fuzz", "--design", "zoo-done-before-record", "--examples", "3", "--seed", "1", "-j", "1",
                    "--out", str(fuzzed), cwd=str(tmp_path))
    assert done.returncode in (0, 1), done.stderr[-2000:]
    files = written(fuzzed)
    for page in ("cli.md", "results.md"):
        named = documented(page, "fuzz", "zoo-done-before-record")
        assert files <= named and {name for name in named if not name.endswith("/")} <= files, (page, files, named)


def test_the_committed_explore_results_say_what_explore_says_today():
    """results/ holds explore reports a reader opens without running anything: they must not speak in words
    explore dropped ("(claims idempotence)", "N break a promise"), and each has its triage page beside it."""
    reports = sorted(glob.glob(os.path.join(PROJECT_ROOT, "results", "**", "explore-*.md"), recursive=True))
    assert reports
    for report in reports:
        text = open(report, encoding="utf-8").read()
        shown = os.path.relpath(report, PROJECT_ROOT)
        assert "claims idempotence)" not in text and "break a promise" not in text, shown
        assert re.search(r"held to .*: \d+ crash points?, \d+ broken, \d+ distinct failures?", text), shown
        assert os.path.exists(report[:-3] + ".html"), shown
