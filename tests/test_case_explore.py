"""`killtest cases --explore CASE` (issue 34): which of a case's options an exploration takes, and what the
results say of each release. The explorations themselves are `killtest explore` runs (tests/test_explore*)."""

from __future__ import annotations

import json
import os

from killtest.harness.campaigns.case_explore import explore_command, explore_words
from killtest.harness.design.case_spec import CASES_FOLDER, load_case
from killtest.harness.report.case_explore_table import exploration_lines, explore_markdown, write_exploration


def test_an_exploration_takes_the_cases_catalog_time_limit_and_patience_not_its_schedule():
    """explore takes --no-progress-timeout as run does (issue 33): a framework that waits out a killed start's
    locks meets the same patience in its case's exploration as in its case's run."""
    crawlee = load_case(os.path.join(CASES_FOLDER, "crawlee-node-1736"))
    assert explore_words(crawlee) == ["--listing-pages", "2", "--per-page", "5", "--time-limit", "60",
                                      "--no-progress-timeout", "20"]
    scrapy = load_case(os.path.join(CASES_FOLDER, "scrapy-7094"))
    assert explore_words(scrapy) == ["--listing-pages", "10", "--time-limit", "120"]


def test_a_release_on_a_servers_store_is_explored_at_its_statements_without_power_cuts():
    """`cases --explore bullmq-at-least-once` passed --power-cut, which explore refuses for a Redis store (its data
    is in the server's own directory): every release stopped at once. A file store's release keeps its cuts."""
    bullmq = load_case(os.path.join(CASES_FOLDER, "bullmq-at-least-once"))
    for rel in bullmq.releases:
        assert "--power-cut" not in explore_command(bullmq, rel, True, 2, "/out")
    scrapy = load_case(os.path.join(CASES_FOLDER, "scrapy-7094"))
    assert "--power-cut" in explore_command(scrapy, scrapy.releases[0], True, 2, "/out")
    assert "--power-cut" not in explore_command(scrapy, scrapy.releases[0], False, 2, "/out")


def test_an_exploration_runs_its_points_at_the_jobs_asked():
    scrapy = load_case(os.path.join(CASES_FOLDER, "scrapy-7094"))
    words = explore_command(scrapy, scrapy.releases[0], True, 8, "/out")
    assert words[words.index("-j") + 1] == "8"


def test_a_case_not_explored_says_why_on_the_page(tmp_path):
    why = exploration_lines(str(tmp_path / "bullmq-max-stalled"))[1]
    assert why.startswith("Exploration: An exploration kills once")
    assert exploration_lines(str(tmp_path / "no-such-case")) == []


def test_a_case_explored_without_power_cuts_says_so_though_they_were_asked_for():
    """`cases --explore` asks for power cuts; a server store's release gets none (its command has no --power-cut),
    and the page must not claim them."""
    data = {"case": "c", "command": "killtest cases --explore c", "power_cut": True, "jobs": 2, "measured_at": "t",
            "killtest_commit": None, "releases": [row("1.0", 0)]}
    assert explore_markdown(data).startswith("# Exploration of c: every store write\n")
    data["releases"][0]["command"] = "killtest explore --design d.toml --power-cut"
    assert explore_markdown(data).startswith("# Exploration of c: every store write and power cut\n")


def row(key: str, broken: int, failures: list | None = None) -> dict:
    return {"version": key, "key": key, "role": "fixed", "label": "", "command": "killtest explore ...",
            "out": "/x", "seconds": 60.0, "finished_at": "2026-12-05T09:30:30Z", "points": 10, "broken": broken,
            "distinct": len(failures or []), "failures": failures or []}


def test_a_release_explored_again_replaces_its_line_and_keeps_the_others(tmp_path):
    failure = {"points": "w5", "count": 1, "findings": ["lost"], "where": "before the 1st write to q/0",
               "problems": ["lost 30 of 30 records"], "replay": "PATH=/env/bin:\"$PATH\" killtest replay --schedule w5"}
    first = {"case": "c", "command": "k", "power_cut": True, "jobs": 2, "measured_at": "t", "killtest_commit": None,
             "releases": [row("1.0", 1, [failure]), row("1.1", 0)]}
    write_exploration(str(tmp_path), first)
    write_exploration(str(tmp_path), {**first, "releases": [row("1.1", 2, [failure, failure])]})
    data = json.loads((tmp_path / "cases" / "c" / "explore.json").read_text())
    assert [(r["key"], r["broken"]) for r in data["releases"]] == [("1.0", 1), ("1.1", 2)]
    page = explore_markdown(data)
    assert "replay: `PATH=/env/bin:\"$PATH\" killtest replay --schedule w5`" in page
    assert "1.1 (fixed): 2 of 10 points broken" in exploration_lines(str(tmp_path / "cases" / "c"))[1]


def test_the_coverage_sentence_names_the_most_written_files_and_counts_the_rest():
    from killtest.harness.report.case_explore_table import coverage_text
    writes = [{"file": f"f{i}", "seen": 10 - i, "points": 0, "left_out": 10 - i} for i in range(8)]
    why = "52 writes (" + ", ".join(f"{10 - i} to f{i}" for i in range(8)) + "): strace cannot stop at them"
    text = coverage_text({"pages_asked": 4, "pages_killed_at": ["/list/0", "/list/1"], "writes": writes,
                          "left_out": [why]}, kinds=2)
    assert text == ("killed at 2 distinct pages of the 4 a crawl asks for; 52 store writes seen, 0 explored"
                    " (f0: 10 seen, 0 explored; f1: 9 seen, 0 explored; 6 more kinds of file); left out: 52 writes"
                    " (10 to f0, 9 to f1 and 6 more kinds): strace cannot stop at them")
