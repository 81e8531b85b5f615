"""Issue 44, item 1: a bisection decides every release at the same write, and names the releases the registry lacks.

crawlee-node-2085-locking's bisection compared `w14` landing on a dataset write (3.9.x) with `w14` on a request's
lock write (3.10 and after): a store write named by its number is refused, a case names the write by its file in
its bisect.toml, and a release where that write never comes is "no verdict (point not reached)", never clean.
Its boundary "3.9.2 the last clean, 3.10.1 the first flagged" hid that the registry here has no 3.10.0, the
release whose changelog makes RequestQueue v2 the default: the boundary now says so, quoting the changelog.
Deterministic: no registry, no run (the real bisections are results/cases/<case>/bisect.md).
"""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from killtest.harness.campaigns.case_bisect import (
    NO_VERDICT,
    NOT_REACHED,
    Bisection,
    bisect_case,
    rows_at_kill,
    summary_lines,
    verdict_of,
)
from killtest.harness.campaigns.case_bisect_plan import bisect_plan, numbered_writes, schedule_of, with_schedule
from killtest.harness.campaigns.case_plan import ReleaseOutcome
from killtest.harness.campaigns.case_registry import missing_between, version_key
from killtest.harness.design.case_spec import load_case
from killtest.harness.errors import KilltestError
from killtest.harness.report.case_bisect_table import bisect_markdown, bisection_lines, missing_words

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(ROOT, "scrapers", "cases")
NOTE = {"version": "3.10.0", "date": "2024-05-16", "link": "https://example.org/CHANGELOG.md#3100",
        "changes": ["make `RequestQueue` v2 the default queue (#2390)"], "others": 15}


def test_a_store_write_named_by_its_number_is_another_write_on_another_release():
    assert numbered_writes("w14") == ["w14"]
    assert numbered_writes("r30,w3") == ["w3"]
    assert numbered_writes("w2:storage/request_queues/default/HS6QWmr3mrfll6M.json") == []
    assert numbered_writes("r30,r90") == [] and numbered_writes("w3:redis") == []


def test_a_case_whose_schedule_counts_writes_and_declares_no_point_is_refused_before_anything_runs(tmp_path):
    case = dataclasses.replace(load_case(os.path.join(CASES, "crawlee-node-1736")), folder=str(tmp_path))
    with pytest.raises(KilltestError, match=r"names a store write by its number \(w3\).*bisect.toml"):
        bisect_case(case, str(tmp_path / "out"), say=lambda line: None)


def test_the_cases_bisected_at_a_write_name_it_by_its_file_and_say_why():
    for name, schedule in (("crawlee-node-2085-locking", "w2:storage/request_queues/default/HS6QWmr3mrfll6M.json"),
                           ("crawlee-node-1736", "w1:storage/request_queues/default/yXgHHT8VyTIWio0.json"),
                           ("crawlee-node-2085", "w1:storage/request_queues/default/yXgHHT8VyTIWio0.json")):
        plan = bisect_plan(load_case(os.path.join(CASES, name)))
        assert plan["schedule"] == schedule and "uniqueKey" in plan["why"]
        assert all(note["link"].startswith("https://github.com/apify/crawlee/") and note["changes"]
                   for note in plan["missing"])
    locking = bisect_plan(load_case(os.path.join(CASES, "crawlee-node-2085-locking")))
    assert any("`RequestQueue` v2 the default" in change for note in locking["missing"] if note["version"] == "3.10.0"
               for change in note["changes"])


@pytest.mark.parametrize(("text", "said"), [
    ('[point]\nschedule = "w14"\nwhy = "x"\n', "names a store write by its number"),
    ('[point]\nschedule = "w2:a.json"\n', "says why it is the same write"),
    ('[[missing]]\nversion = "3.10.0"\n', "each [[missing]] has a version, a link and changes"),
    ('[other]\n', "a [point] table"),
])
def test_a_bad_bisect_toml_is_one_line(tmp_path, text, said):
    (tmp_path / "bisect.toml").write_text(text)
    case = dataclasses.replace(load_case(os.path.join(CASES, "crawlee-node-1736")), folder=str(tmp_path))
    with pytest.raises(KilltestError, match=said.replace("[", r"\[")):
        bisect_plan(case)


def test_the_bisections_schedule_replaces_the_cases_own():
    args = ("--runs", "1", "--schedule", "w14", "--time-limit", "420")
    assert schedule_of(args) == "w14" and schedule_of(("--schedule=r3",)) == "r3" and schedule_of(()) == ""
    assert with_schedule(args, "w2:a.json") == ("--schedule", "w2:a.json", "--runs", "1", "--time-limit", "420")
    assert with_schedule(("--schedule=r3", "--runs", "1"), "r5") == ("--schedule", "r5", "--runs", "1")


def test_a_release_where_no_kill_landed_gives_no_verdict_and_the_summary_says_why():
    unreached = ReleaseOutcome("c", "3.9.2", "", "design.toml", [], ["lost"], validity="valid", kills=0)
    assert verdict_of(unreached, ["lost"]) == NOT_REACHED and NOT_REACHED in NO_VERDICT
    never = dataclasses.replace(unreached, validity="error", error="killtest: error: kill point w2:a.json: the start"
                                " makes no store write to a.json (files it writes: b.json)")
    assert verdict_of(never, ["lost"]) == NOT_REACHED  # the file never written at all: the point is not reached
    killed = dataclasses.replace(unreached, kills=1)
    assert verdict_of(killed, ["lost"]) == "clean"
    result = Bisection("c", "crawlee", "3.9.2", "3.10.1", ["3.9.2", "3.10.1"])
    result.runs = [{"version": "3.9.2", "verdict": NOT_REACHED, "error": "", "out": "o/3.9.2"},
                   {"version": "3.10.1", "verdict": "flagged", "error": "", "out": "o/3.10.1"}]
    lines = summary_lines(result)
    assert "3.9.2 gave no verdict and was gone around: its run was no verdict (point not reached)" in lines[1]


def test_upstream_releases_the_registry_lacks_are_placed_after_the_release_before_them():
    listed = ("3.9.1", "3.9.2", "3.10.1", "3.10.2", "3.10.3", "3.10.5", "3.11.0")
    notes = [{**NOTE, "version": "3.10.4"}, NOTE, {**NOTE, "version": "3.9.2"}, {**NOTE, "version": "3.12.0"}]
    kept = missing_between("node", notes, listed, "3.9.1", "3.11.0")
    assert [(m["version"], m["after"]) for m in kept] == [("3.10.0", "3.9.2"), ("3.10.4", "3.10.3")]
    assert sorted(["2.14.0", "2.14.0rc1", "2.13.4", "2.9.1"], key=version_key("python")) == [
        "2.9.1", "2.13.4", "2.14.0rc1", "2.14.0"]


def test_a_boundary_next_to_a_missing_release_names_it_with_the_changelogs_words(tmp_path):
    assert missing_words([]) == ""
    assert missing_words([NOTE]) == (" (3.10.0 not in the registry: 3.10.0 (2024-05-16): \u201cmake `RequestQueue` v2"
                                     " the default queue (#2390)\u201d and 15 other changelog entries"
                                     " [changelog](https://example.org/CHANGELOG.md#3100))")
    two = missing_words([{**NOTE, "version": "3.2.0", "others": 1}, {**NOTE, "version": "3.2.1", "others": 0}],
                        link=False)
    assert two.startswith(" (3.2.0, 3.2.1 not in the registry: 3.2.0 (2024-05-16):")
    assert "and 1 other changelog entry (https://example.org" in two
    run = {"got": ["lost"], "rows": 9, "missing": 1, "duplicated": 0, "kills": 1, "seconds": 200.0,
           "env_seconds": 0.0, "packages": ["crawlee@3.10.1"], "error": "", "crashed_in": ""}
    data = {"case": "c", "package": "crawlee", "first": "3.9.2", "last": "3.10.1", "versions": ["3.9.2", "3.10.1"],
            "runs": [{**run, "version": "3.9.2", "verdict": "clean", "got": []},
                     {**run, "version": "3.10.1", "verdict": "flagged"}],
            "changes": [{"last": "3.9.2", "last_verdict": "clean", "first": "3.10.1", "first_verdict": "flagged",
                         "neighbours": True, "missing": ["3.10.0"]}],
            "missing": [{**NOTE, "after": "3.9.2"}], "point": "w2:a.json", "point_why": "the same request's file",
            "every": False, "warning": None, "seconds": 230.0, "measured_at": "2026-12-06T22:00:00Z",
            "killtest_commit": "abc", "command": "killtest cases --bisect c"}
    page = bisect_markdown(data)
    assert "- The verdict changes between **3.9.2** and **3.10.1** (3.10.0 not in the registry: 3.10.0" in page
    assert "Every release was killed at `w2:a.json`: the same request's file." in page
    rows = [line.split(" | ")[:2] for line in page.splitlines() if line.startswith("| 3.")]
    assert rows == [["| 3.9.2", "clean"], ["| 3.10.0", "not in the registry"], ["| 3.10.1", "flagged"]]
    two = {**data, "missing": [{**NOTE, "version": v, "after": "3.9.2"} for v in ("3.10.0", "3.10.0-1", "3.10.0-2")]}
    rows = [line.split(" | ")[0] for line in bisect_markdown(two).splitlines() if line.startswith("| 3.")]
    assert rows == ["| 3.9.2", "| 3.10.0", "| 3.10.0-1", "| 3.10.0-2", "| 3.10.1"]  # in the registry's order
    (tmp_path / "bisect.json").write_text(json.dumps(data))
    text = "\n".join(bisection_lines(str(tmp_path), []))
    assert "at `w2:a.json` on every release: between **3.9.2** and **3.10.1** (3.10.0 not in the registry:" in text
    result = Bisection(**{k: v for k, v in data.items() if k in {f.name for f in dataclasses.fields(Bisection)}})
    assert summary_lines(result)[0].startswith("bisect c: the verdict changes between 3.9.2 and 3.10.1 (3.10.0 not"
                                               " in the registry: ")


def test_the_rows_the_store_held_when_the_kill_landed_are_read_from_the_runs_kill_event(tmp_path):
    """3.5.8's kill at the 2nd write of /product/3's file came with 4 rows stored (its record among them)."""
    assert rows_at_kill(str(tmp_path)) is None
    (tmp_path / "history").mkdir()
    events = [{"type": "start", "start": 0}, {"type": "kill", "start": 0, "store_rows": 4, "point": "w2:a.json"},
              {"type": "kill", "start": 1, "store_rows": 9}]
    (tmp_path / "history" / "run1.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert rows_at_kill(str(tmp_path)) == 4
