"""`killtest cases --bisect` (issue 34): the bisection as a pure function of releases and verdicts, the
registry's version order, bad input, and one bisection of a real case on three real Scrapy releases.

The end-to-end test installs Scrapy 2.13.4, 2.14.0 and 2.14.1 from PyPI the first time (cached in
~/.cache/killtest/cases/ after, shared with `killtest cases`), lists them with pip's own `pip index
versions`, and runs scrapy-7094's schedule on as few as the search needs (about 10 s a release).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from killtest.harness.campaigns.case_bisect import Bisection, crashed_in, search, summary_lines, verdict_of
from killtest.harness.campaigns.case_plan import ReleaseOutcome
from killtest.harness.campaigns.case_registry import between, is_npm_prerelease, npm_key, split_pin
from killtest.harness.errors import KilltestError
from killtest.harness.report.case_bisect_table import bisect_markdown

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KILLTEST = [sys.executable, "-m", "killtest"]
VERSIONS = [f"1.{i}" for i in range(20)]


def verdicts_changing_at(*changes: int):
    """A verdict function that flips at each index in `changes` and records what was asked."""
    asked: list[str] = []

    def verdict(version: str) -> str:
        asked.append(version)
        flips = sum(1 for c in changes if VERSIONS.index(version) >= c)
        return "flagged" if flips % 2 == 0 else "clean"
    return verdict, asked


@pytest.mark.parametrize("change", [1, 2, 7, 10, 13, 19])
def test_one_change_is_found_between_neighbours_in_about_log2_runs(change):
    verdict, asked = verdicts_changing_at(change)
    found = search(VERSIONS, verdict, warn=pytest.fail)
    assert [(VERSIONS[a], VERSIONS[b]) for a, b in found.changes()] == [(VERSIONS[change - 1], VERSIONS[change])]
    assert len(asked) == len(set(asked)) <= 3 + 5  # both ends, the probe, then halving 20 releases
    assert not found.every and found.warning is None


def test_a_verdict_that_changes_twice_is_warned_of_and_every_release_is_run():
    verdict, asked = verdicts_changing_at(6, 14)  # a fix at 1.6, the bug back at 1.14
    warned: list[str] = []
    found = search(VERSIONS, verdict, warn=warned.append)
    assert found.every and warned and "more than once" in warned[0]
    assert sorted(asked) == sorted(VERSIONS)
    assert [(VERSIONS[a], VERSIONS[b]) for a, b in found.changes()] == [("1.5", "1.6"), ("1.13", "1.14")]


def test_every_runs_every_release_in_order_and_no_verdict_is_asked_twice():
    verdict, asked = verdicts_changing_at(3)
    found = search(VERSIONS, verdict, every=True, warn=pytest.fail)
    assert asked == VERSIONS and found.order == list(range(len(VERSIONS)))


def test_the_same_verdict_at_both_ends_and_the_probe_runs_three_releases_and_finds_no_change():
    """Halving cannot see a change and back between releases that agree: that is what --every is for."""
    verdict, asked = verdicts_changing_at(2, 4)
    found = search(VERSIONS, verdict, warn=pytest.fail)
    assert found.changes() == [] and len(asked) == 3
    assert search(VERSIONS, verdicts_changing_at(2, 4)[0], every=True).changes() == [(1, 2), (3, 4)]


def test_a_release_that_does_not_run_is_no_evidence_and_the_search_goes_around_it():
    """crawlee 1.0.0 does not start beside today's pydantic: an `error` neither starts nor ends a change."""
    broken = {"1.0", "1.9", "1.10", "1.11"}
    verdict, asked = verdicts_changing_at(13)

    def or_error(version: str) -> str:
        return "error" if version in broken else verdict(version)
    found = search(VERSIONS, or_error, warn=pytest.fail)
    assert [(VERSIONS[a], VERSIONS[b]) for a, b in found.changes()] == [("1.12", "1.13")]
    assert not found.every
    assert search(["2.0", "2.1"], lambda v: "error" if v == "2.1" else "flagged").changes() == []


def test_npm_versions_sort_as_semver_and_prereleases_are_told_apart():
    listed = ["3.13.3", "3.13.3-beta.10", "3.13.3-beta.9", "3.2.2", "3.10.1", "3.13.10"]
    assert sorted(listed, key=npm_key) == ["3.2.2", "3.10.1", "3.13.3-beta.9", "3.13.3-beta.10", "3.13.3", "3.13.10"]
    assert is_npm_prerelease("3.16.1-beta.41") and not is_npm_prerelease("3.16.1")
    assert split_pin("node", "@crawlee/core@3.2.2") == ("@crawlee/core", "", "3.2.2")
    assert split_pin("python", "apify[scrapy]==4.0.1") == ("apify", "[scrapy]", "4.0.1")


def test_a_range_is_two_releases_the_registry_lists_oldest_first():
    listed = ("3.0.4", "3.1.0", "3.2.2", "3.5.8")
    assert between(listed, "3.1.0", "3.5.8", "crawlee") == ["3.1.0", "3.2.2", "3.5.8"]
    with pytest.raises(KilltestError, match=r"crawlee 3.2.0 is not a release on the registry"):
        between(listed, "3.2.0", "3.5.8", "crawlee")
    with pytest.raises(KilltestError, match="not older"):
        between(listed, "3.5.8", "3.1.0", "crawlee")


@pytest.mark.parametrize(("words", "said"), [
    (["--bisect", "no-such-case"], "no case named no-such-case"),
    (["--bisect", "puppeteer-shop"], "no buggy release to bisect"),
    (["--bisect", "scrapy-7094", "--from", "2.13.99"], "scrapy 2.13.99 is not a release on the registry"),
    (["--every"], "--every goes with --bisect CASE"),
    (["--report", "scrapy-7094", "--from", "2.13.4"], "--from goes with --bisect CASE"),
    (["--bisect", "scrapy-7094", "--explore", "scrapy-7094"], "--bisect and --explore are two jobs"),
    (["--bisect", "scrapy-7094", "-j", "4"], "--explore CASE"),
    (["--bisect", "scrapy-7094", "-j", "2"], "--explore CASE"),
    (["--explore", "scrapy-7094", "-j", "0"], "--jobs/-j: must be more than zero"),
])
def test_bad_bisect_input_is_one_line_and_exit_2(tmp_path, words, said):
    done = subprocess.run([*KILLTEST, "cases", *words, "--out", str(tmp_path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0 and said in done.stderr


@pytest.mark.slow
def test_scrapy_7094_bisected_on_three_real_releases_finds_2_14_0_the_first_flagged(tmp_path):
    """2.13.4 is clean, 2.14.0 brought the line-buffered requests.seen (#7094), 2.14.1 kept it."""
    done = subprocess.run([*KILLTEST, "cases", "--bisect", "scrapy-7094", "--from", "2.13.4", "--to", "2.14.1",
                           "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads((tmp_path / "cases" / "scrapy-7094" / "bisect.json").read_text())
    assert data["versions"] == ["2.13.4", "2.14.0", "2.14.1"]
    assert [(c["last"], c["last_verdict"], c["first"], c["first_verdict"]) for c in data["changes"]] == [
        ("2.13.4", "clean", "2.14.0", "flagged")], [(r["version"], r["verdict"], r["got"], r["error"], r["seconds"])
                                                    for r in data["runs"]]
    assert {r["version"]: "scrapy==" + r["version"] in [p.lower() for p in r["installed"]] for r in data["runs"]} == {
        v: True for v in data["versions"]}  # each run's env held the release it is named for
    assert "between 2.13.4 and 2.14.0: 2.13.4 is the last clean, 2.14.0 the first flagged" in done.stderr
    assert "| 2.14.0 | flagged | lost" in bisect_markdown(data)


def test_the_page_says_where_the_pinned_releases_and_the_bisection_disagree_and_where_a_crash_moved(tmp_path):
    from killtest.harness.report.case_bisect_table import bisection_lines

    def run(version: str, verdict: str, crashed: str = "") -> dict:
        return {"version": version, "verdict": verdict, "crashed_in": crashed}
    data = {"case": "c", "package": "p", "first": "1.0", "last": "1.3", "versions": ["1.0", "1.1", "1.2", "1.3"],
            "runs": [run("1.0", "flagged", "E: x in open < start"), run("1.3", "clean"),
                     run("1.1", "flagged", "E: x in listHead < isEmpty"), run("1.2", "clean")],
            "changes": [{"last": "1.1", "last_verdict": "flagged", "first": "1.2", "first_verdict": "clean",
                         "neighbours": True}], "every": False, "warning": None, "seconds": 12.0,
            "measured_at": "2026-12-05T09:00:00Z", "killtest_commit": "abc"}
    (tmp_path / "bisect.json").write_text(json.dumps(data))
    pinned = [{"version": "1.0", "expect": ["lost"]}, {"version": "1.2", "expect": ["lost"]},
              {"version": "1.3", "expect": []}]
    text = "\n".join(bisection_lines(str(tmp_path), pinned))
    assert "between **1.1** and **1.2** (1.1 the last flagged, 1.2 the first clean)" in text
    assert "4 of 4 releases" in text
    assert "disagree: 1.2 (pinned flagged, bisected clean)" in text and "1.0 (pinned" not in text
    assert "in `open < start` from 1.0; in `listHead < isEmpty` from 1.1 (between 1.0 and 1.1)" in text
    assert bisection_lines(str(tmp_path / "not-bisected"), pinned) == []


def test_a_release_broken_otherwise_than_by_the_cases_bug_has_a_verdict_of_its_own():
    """crawlee-node-2085-locking bisected from 3.5.8 called 3.5.8's empty dataset file (`unreadable`) and 3.11.5's
    loss both "flagged", so nothing was halved and where the loss begins stayed unknown."""
    def outcome(validity, got):
        return ReleaseOutcome("c", "1.0", "", "design.toml", [], ["lost"], validity=validity, got=got, kills=1)
    assert verdict_of(outcome("invalid", ["lost"]), ["lost"]) == "flagged"
    assert verdict_of(outcome("invalid", ["crashed", "lost"]), ["lost"]) == "flagged"
    assert verdict_of(outcome("invalid", ["unreadable"]), ["lost"]) == "flagged for unreadable, not lost"
    assert verdict_of(outcome("valid", []), ["lost"]) == "clean"
    assert verdict_of(outcome("error", []), ["lost"]) == "error"
    timed_out = outcome("invalid", ["liveness"])
    timed_out.outcome = "timed_out"  # `lost` is never counted in a crawl that did not finish: no evidence
    assert verdict_of(timed_out, ["lost"]) == "timed out" and verdict_of(timed_out, ["liveness"]) == "flagged"
    found = search(["3.5.8", "3.8.0", "3.11.5", "3.18.1"], {"3.5.8": "flagged for unreadable, not lost",
                   "3.8.0": "flagged for unreadable, not lost", "3.11.5": "flagged", "3.18.1": "flagged"}.get,
                   warn=lambda line: None)
    assert [(found.versions[a], found.versions[b]) for a, b in found.changes()] == [("3.8.0", "3.11.5")]


def test_a_release_broken_by_another_finding_is_on_the_no_bug_side_of_a_change():
    """crawlee-node-2085-locking's w14: clean or an empty dataset file (unreadable, depending on which write it
    lands on) up to some release, the case's loss after it: one change, halved, found between neighbours."""
    versions = [f"3.{i}" for i in range(45)]
    truth = {v: "clean" if i < 30 and i % 3 else "flagged for unreadable, not lost" if i < 30 else "flagged"
             for i, v in enumerate(versions)}
    warned: list[str] = []
    found = search(versions, truth.get, warn=warned.append)
    assert not warned and not found.every and len(found.order) <= 9
    assert [(found.versions[a], found.versions[b]) for a, b in found.changes()] == [("3.29", "3.30")]


def test_where_a_start_crashed_is_read_from_crash_events_not_from_a_killed_starts_stderr(tmp_path):
    """crawlee-node-2085-locking's bisect.md said every start "crashed in" strace's own line at the kill
    ("dispatch_event: pid N has delayed wait data set already"): that was the killed start's output."""
    history = tmp_path / "history"
    history.mkdir()
    killed = {"type": "start_output", "start": 0, "stderr_tail": ["strace: dispatch_event: pid 1 has delayed ..."]}
    (history / "run1.jsonl").write_text(json.dumps(killed) + "\n")
    assert crashed_in(str(tmp_path)) == ""
    crash = {"type": "crash", "start": 1, "returncode": 1, "stderr_tail": [
        "SyntaxError: Unexpected end of JSON input", "    at JSON.parse (<anonymous>)",
        "    at RequestQueueClient.listHead (x.js:1:1)", "    at async RequestQueue._ensureHeadIsNonEmpty (y.js:2:2)"]}
    (history / "run1.jsonl").write_text(json.dumps(killed) + "\n" + json.dumps(crash) + "\n")
    assert crashed_in(str(tmp_path)) == ("SyntaxError: Unexpected end of JSON input in RequestQueueClient.listHead"
                                         " < RequestQueue._ensureHeadIsNonEmpty")



def test_a_pip_without_json_listings_is_read_from_its_available_versions_line(monkeypatch):
    """A new venv's own pip (23.2 here) refuses `pip index versions --json`; its text line lists the same releases,
    newest first (seen from the wheel: `killtest cases --bisect` stopped at "no such option: --json")."""
    from killtest.harness.campaigns import case_registry

    def pip(command, what):
        if "--json" in command:
            raise KilltestError(f"{what} failed: no such option: --json")
        return "scrapy (2.15.0)\nAvailable versions: 2.15.0, 2.14.2, 2.14.1\n"
    monkeypatch.setattr(case_registry, "_ask", pip)
    case_registry.releases.cache_clear()
    try:
        assert case_registry.releases("python", "scrapy-text-listing") == ("2.14.1", "2.14.2", "2.15.0")
    finally:
        case_registry.releases.cache_clear()


def test_the_summary_names_each_release_that_gave_no_verdict_and_why():
    """A release that did not install or whose crawl timed out is gone around: the summary says so, where the
    user would otherwise read a change (or none) as covering the whole range."""
    result = Bisection("c", "pkg", "1.0", "1.2", ["1.0", "1.1", "1.2"])
    result.runs = [{"version": "1.0", "verdict": "error", "error": "pip install pkg==1.0 failed: no wheel",
                    "out": "o/1.0"},
                   {"version": "1.1", "verdict": "flagged", "error": "", "out": "o/1.1"},
                   {"version": "1.2", "verdict": "timed out", "error": "", "out": "o/1.2"}]
    lines = summary_lines(result)
    assert lines[0] == "bisect c: flagged at every release run from 1.0 to 1.2 that gave one"
    assert "1.0 gave no verdict and was gone around: pip install pkg==1.0 failed: no wheel" in lines[1]
    assert "1.2 gave no verdict and was gone around: its run was timed out (log: o/1.2/killtest.log)" in lines[2]
    assert lines[3] == "bisect c: ran 3 of 3 releases in 0s"
    result.runs[1:] = [{"version": "1.1", "verdict": "clean", "error": "", "out": "o/1.1"},
                       {"version": "1.2", "verdict": "flagged for unreadable, not lost", "error": "", "out": "o/1.2"}]
    assert summary_lines(result)[0] == ("bisect c: not flagged for the case's bug at every release run from 1.0 to"
                                        " 1.2 that gave one")
