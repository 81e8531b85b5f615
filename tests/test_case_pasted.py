"""Committed case results give their commands from the repository root, whichever checkout ran them (issue 34).

A case exploration or bisection run in one checkout (a helper's /work/wt/x) records its commands whole, with
that checkout's paths; the pages written inside a checkout (results/cases/<case>/explore.md, bisect.md) must
read `.venv/bin/killtest explore --design scrapers/... --out results/...`, so a reader pastes them from the
root of any clone. Written outside a checkout, a page keeps the whole lines (pasted from anywhere).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

from killtest.harness.report.case_bisect_table import write_bisection
from killtest.harness.report.case_explore_table import write_exploration
from killtest.harness.report.pasted import from_root

HOME = os.path.expanduser("~")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def explored_in(root: str) -> dict:
    """An exploration's data as campaigns/case_explore.py records it when run in the checkout `root`."""
    env = f'PATH={HOME}/.cache/killtest/cases/0123456789abcdef/bin:"$PATH"'
    design = f"{root}/scrapers/cases/c/design.toml"
    out = f"{root}/results/cases/c/1.0/explore"
    row = {"version": "1.0", "key": "1.0", "role": "fixed", "label": "", "root": root, "out": out,
           "command": f"{env} {root}/.venv/bin/killtest explore --design {design} --power-cut -j 2 --out {out}",
           "seconds": 60.0, "finished_at": "2026-12-05T09:30:30Z", "points": 10, "broken": 1, "distinct": 1,
           "coverage": {"pages_asked": 8, "pages_killed_at": ["/list/0"], "left_out": [],
                        "writes": [{"file": "storage/N.json", "seen": 30, "points": 30, "left_out": 0}]},
           "failures": [{"points": "w5", "count": 1, "findings": ["lost"], "where": "before the 1st write",
                         "problems": [f"start 2 exited: {design}:3: bad"],
                         "replay": f"{env} killtest replay --design {design} --schedule w5"}]}
    return {"case": "c", "command": f"killtest cases --explore c --out {root}/results", "power_cut": True,
            "jobs": 2, "measured_at": "t", "killtest_commit": None, "root": root, "releases": [row]}


def test_an_exploration_run_in_another_checkout_reads_from_the_root_of_this_one(tmp_path):
    elsewhere = str(tmp_path / "wt" / "helper")
    page = write_exploration(os.path.join(elsewhere, "results"), explored_in(elsewhere))
    text = open(page, encoding="utf-8").read()
    assert str(tmp_path) not in text and f"={HOME}/" not in text
    assert ('`PATH=~/.cache/killtest/cases/0123456789abcdef/bin:"$PATH" .venv/bin/killtest explore --design'
            " scrapers/cases/c/design.toml --power-cut -j 2 --out results/cases/c/1.0/explore`") in text
    assert "replay: `PATH=~/.cache/killtest/cases/0123456789abcdef/bin:\"$PATH\" killtest replay --design" \
           " scrapers/cases/c/design.toml --schedule w5`" in text
    assert "start 2 exited: scrapers/cases/c/design.toml:3: bad" in text
    assert "`killtest cases --explore c --out results`" in text
    assert "Coverage: killed at 1 distinct page of the 8 a crawl asks for; 30 store writes seen, 30 explored" \
           " (storage/N.json: 30 seen, 30 explored); left out: nothing." in text
    # the data keeps the whole lines, with the checkout they ran in
    data = json.loads((tmp_path / "wt" / "helper" / "results" / "cases" / "c" / "explore.json").read_text())
    assert data["releases"][0]["command"].startswith(f"PATH={HOME}/") and data["releases"][0]["root"] == elsewhere


def test_an_exploration_written_outside_any_checkout_keeps_its_whole_lines(tmp_path):
    elsewhere = str(tmp_path / "wt" / "helper")
    text = open(write_exploration(str(tmp_path / "outside"), explored_in(elsewhere)), encoding="utf-8").read()
    assert f"--design {elsewhere}/scrapers/cases/c/design.toml" in text


def test_a_bisection_run_in_another_checkout_gives_its_command_and_errors_from_the_root(tmp_path):
    elsewhere = str(tmp_path / "wt" / "helper")
    run = {"version": "1.0", "verdict": "error", "got": [], "rows": 0, "missing": 0, "duplicated": 0, "kills": 0,
           "seconds": 1.0, "env_seconds": 2.0, "packages": ["p==1.0"], "installed": [], "replay": None,
           "error": f"killtest: error: {elsewhere}/scrapers/cases/c/design.toml:3: bad", "command": "",
           "out": f"{elsewhere}/results/cases/c/bisect/1.0", "crashed_in": ""}
    data = {"case": "c", "package": "p", "first": "1.0", "last": "1.0", "versions": ["1.0"], "runs": [run],
            "changes": [], "every": False, "warning": None, "seconds": 3.0, "measured_at": "t",
            "killtest_commit": None, "root": elsewhere,
            "command": f"{elsewhere}/.venv/bin/killtest cases --bisect c --out {elsewhere}/results"}
    text = open(write_bisection(os.path.join(elsewhere, "results"), data), encoding="utf-8").read()
    assert str(tmp_path) not in text
    assert "`.venv/bin/killtest cases --bisect c --out results`" in text
    assert "- 1.0: killtest: error: scrapers/cases/c/design.toml:3: bad" in text


def test_only_an_assignments_home_becomes_a_tilde():
    line = f'NODE_PATH={HOME}/.cache/n PATH={HOME}/.cache/b:"$PATH" killtest replay --out {HOME}/results'
    assert from_root(line) == f'NODE_PATH=~/.cache/n PATH=~/.cache/b:"$PATH" killtest replay --out {HOME}/results'


def test_a_report_measured_in_another_checkout_reads_from_the_root():
    """The committed report.json of crawlee-node-1736 3.2.2, as if its runs had been made in another checkout."""
    from killtest.harness.report.case_report_page import report_markdown
    path = os.path.join(ROOT, "results", "cases", "crawlee-node-1736", "3.2.2", "report.json")
    measured = json.load(open(path, encoding="utf-8"))
    elsewhere = "/elsewhere/wt/helper"
    facts = json.loads(json.dumps(measured).replace(measured["outcome"]["root"], elsewhere))
    assert elsewhere in json.dumps(facts["located"]) and facts["outcome"]["root"] == elsewhere
    page = report_markdown(facts)
    assert elsewhere not in page and "--design scrapers/cases/crawlee-node-1736/design.toml" in page


def test_a_path_in_a_tool_env_is_written_from_the_home_as_a_tilde_wherever_it_stands(monkeypatch):
    """A located frame's file in a case env (`in f (/root/.cache/killtest/cases/<hash>/node_modules/x.js:3, ...)`)
    reads `~/.cache/killtest/...` on a page, as the env's assignments do; other home paths are left whole."""
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    words = f"in f ({HOME}/.cache/killtest/cases/0123456789abcdef/node_modules/x.js:3, the function's first line)"
    assert from_root(words) == "in f (~/.cache/killtest/cases/0123456789abcdef/node_modules/x.js:3, the function's" \
                               " first line)"
    assert from_root(f"--out {HOME}/results") == f"--out {HOME}/results"


def _written_in_the_checkout(*command: str) -> tuple[str, str]:
    """Run `killtest COMMAND... --out FOLDER` with FOLDER inside this checkout (results/cases/, which git
    ignores); the Markdown page it wrote, and the folder (removed after)."""
    out = tempfile.mkdtemp(prefix="test-pasted-", dir=os.path.join(ROOT, "results", "cases"))
    try:
        done = subprocess.run([sys.executable, "-m", "killtest", *command, "--out", out], capture_output=True,
                              text=True, timeout=240, cwd=ROOT)
        pages = glob.glob(os.path.join(out, "*.md"))
        assert len(pages) == 1, done.stderr
        return open(pages[0], encoding="utf-8").read(), out
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_a_run_written_inside_a_checkout_gives_its_command_from_the_root():
    """results/cases/crawlee-python-1825/<release>/killtest.md carried `/work/main/...` in its command and
    replay lines (issue 34): a page written inside a checkout reads from its root, like the case pages."""
    text, out = _written_in_the_checkout("run", "--design", "naive", "--runs", "1", "--schedule", "r3",
                                         "--listing-pages", "1", "--per-page", "4", "--no-plot")
    assert f"{ROOT}/" not in text
    assert f"--out {os.path.relpath(out, ROOT)}`" in text


def test_an_exploration_written_inside_a_checkout_names_the_programs_frames_from_the_root():
    """results/explore-naive.md named `in crawl (/work/wt/tri24/scrapers/naive.py:37)`: the checkout it ran in."""
    text, _ = _written_in_the_checkout("explore", "--design", "naive", "--only", "w11", "--listing-pages", "1",
                                       "--per-page", "2", "-j", "1")
    assert f"{ROOT}/" not in text
    assert "(scrapers/naive.py:" in text, text
