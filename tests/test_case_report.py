"""`killtest cases --report CASE` (issue 34): an upstream-ready report of a flagged release, from its own runs.

The pure parts are tested on made-up files: which start's output is kept (not killtest's recording), which
noted write is the one the kill landed on, the title. One real report: crawlee-node-1736's 3.2.2 (its env
built once, about 45 s, cached in ~/.cache/killtest/cases/ after; the report's two runs about 45 s).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from killtest.harness.campaigns import case_report
from killtest.harness.campaigns.case_report import _crashes, _exits, _logged, _stacks_for, write_point
from killtest.harness.design.case_spec import CASES_FOLDER, load_case
from killtest.harness.errors import KilltestError
from killtest.harness.report import case_report_repro
from killtest.harness.report.case_report_notes import expected
from killtest.harness.report.case_report_page import _title, _written
from killtest.harness.report.case_report_repro import report_words

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KILLTEST = [sys.executable, "-m", "killtest"]
MEMORY = "/env/node_modules/@crawlee/memory-storage/workers/worker-utils.js:44:40"


def note(pid: int, path: str, caller: str) -> str:
    return json.dumps({"pid": pid, "path": path, "stack": [f"at lockAndWrite ({MEMORY})",
                                                           f"at async RequestQueue.{caller} (/env/node_modules"
                                                           "/@crawlee/core/storages/request_queue.js:1:1)",
                                                           "at async requestHandler (/app/crawler.cjs:47:13)"]})


def test_the_noted_write_is_the_killed_starts_nth_write_of_the_file_the_kill_landed_on(tmp_path):
    stacks = tmp_path / "write-stacks.jsonl"
    stacks.write_text("\n".join([
        note(1, "/tmp/killtest-record-x/storage/q/a.json", "recording"),  # killtest's recording: not a start
        note(7, "/w/storage/q/a.json", "addRequests"), note(7, "/w/storage/q/a.json", "markRequestHandled"),
        note(9, "/w/storage/q/a.json", "afterTheKill")]) + "\n{cut by the kill")
    where = {"where": "before the 2nd write to storage/q/a.json, 405 bytes"}
    assert _stacks_for(str(stacks), where, 0)["stack"][1].startswith("at async RequestQueue.markRequestHandled")
    first = {"where": "before the 1st write to storage/q/a.json"}
    assert _stacks_for(str(stacks), first, 0)["stack"][1].startswith("at async RequestQueue.addRequests")
    assert _stacks_for(str(stacks), first, 1)["stack"][1].startswith("at async RequestQueue.afterTheKill")
    assert _stacks_for(str(stacks), {"where": "before the 1st write to storage/q/b.json"}, 0) is None


def test_the_framework_log_is_kept_per_start_without_the_recording_and_without_colours(tmp_path):
    log = tmp_path / "crawler.log"
    log.write_text("--- crawler started: pid 1, storage /tmp/killtest-record-x/storage\n"
                   "\x1b[31mERROR\x1b[39m in the recording\n"
                   "--- crawler started: pid 2, storage /w/storage\nINFO fine\n"
                   "--- crawler started: pid 3, storage /w/storage\n"
                   "\x1b[33mWARN\x1b[39m RequestQueue: entry x has invalid JSON content and will be ignored\n"
                   "INFO done\nSyntaxError: Unexpected end of JSON input\n    at JSON.parse (<anonymous>)\nnext\n")
    assert _logged(str(log)) == [
        {"start": 1, "blocks": []},
        {"start": 2, "blocks": [["WARN RequestQueue: entry x has invalid JSON content and will be ignored"],
                                ["SyntaxError: Unexpected end of JSON input", "    at JSON.parse (<anonymous>)"]]}]


def test_the_title_names_the_framework_the_caller_of_the_write_and_what_broke():
    facts = {"framework": "crawlee", "version": "3.2.2", "point": "w3", "args": [], "write_stacks": json.loads(
        note(7, "/w/storage/request_queues/default/a.json", "addRequests"))}
    title = _title(facts, {"problems": ["start 2 exited by itself with status 1: SyntaxError: x (broke finishes)"]})
    assert title == ("crawlee 3.2.2: after a SIGKILL during addRequests's write of request_queues/default/a.json,"
                     " start 2 exited by itself with status 1: SyntaxError: x")
    by_request = {"framework": "scrapy", "version": "2.14.0", "point": None, "args": ["--schedule", "r30"]}
    assert _title(by_request, {"problems": ["lost 200 of 200 records"]}).startswith("scrapy 2.14.0: after a SIGKILL"
                                                                                    " at request 30, lost 200")


def test_a_case_killed_at_a_store_write_is_located_and_one_killed_at_a_request_is_not():
    assert write_point(load_case(os.path.join(CASES_FOLDER, "crawlee-node-1736"))) == "w3"
    assert write_point(load_case(os.path.join(CASES_FOLDER, "scrapy-7094"))) is None


@pytest.mark.slow
def test_crawlee_node_1736_report_names_the_framework_write_the_crawler_frame_and_the_crash(tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("npm is missing (apt-get install npm)")
    done = subprocess.run([*KILLTEST, "cases", "--report", "crawlee-node-1736", "--out", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    report = (tmp_path / "cases" / "crawlee-node-1736" / "3.2.2" / "report.md").read_text()
    # Titled by the mechanism, in Crawlee's terms (crawlee-node-1736/repro/report.toml).
    assert report.startswith("# crawlee 3.2.2: a SIGKILL while batchAddRequests writes a new request's file")
    assert "`scrapers/cases/crawlee-node-1736/repro/repro.sh` needs only the framework" in report
    assert "start 2 exit status: 1" in report  # the framework-only run's exit statuses, lifted out of its output
    assert "The framework's write: `at lockAndWrite (node_modules/@crawlee/memory-storage/" in report
    assert "The crawler's nearest frame: `at async CheerioCrawler.requestHandler (scrapers/cases/crawlee-node-2085/"\
           "crawler.cjs:" in report
    assert "SyntaxError: Unexpected end of JSON input" in report  # the framework's own words, from the run
    facts = json.loads((tmp_path / "cases" / "crawlee-node-1736" / "3.2.2" / "report.json").read_text())
    assert facts["outcome"]["validity"] == "invalid" and "crawlee==3.2.2" in facts["outcome"]["installed"]
    # This run's own figures ("0 rows, 10 of 10 lost"), beside the run set of record's when the out dir has one.
    assert re.search(f"{facts['outcome']['missing']} of {facts['outcome']['products']} (records )?lost", report)


def test_the_report_words_beside_a_reproduction_add_to_upstream_toml_and_never_contradict_it(tmp_path):
    case = tmp_path / "c"
    (case / "repro").mkdir(parents=True)
    (case / "upstream.toml").write_text('[report]\nsettings = ["A=1 (why)"]\nmechanism = "the first words"\n')
    (case / "repro" / "repro.sh").write_text("#!/bin/sh\n")
    (case / "repro" / "report.toml").write_text('settings = ["B=2 (why)"]\nwaits = "about 3 s"\n')
    said = report_words("c", str(tmp_path))
    assert said["settings"] == ["A=1 (why)", "B=2 (why)"] and said["waits"] == "about 3 s"
    assert said["mechanism"] == "the first words"
    assert (said["framework_only"], said["framework_only_output"]) == ("repro/repro.sh", "repro/output.txt")
    (case / "repro" / "report.toml").write_text('mechanism = "other words"\n')
    with pytest.raises(KilltestError, match="mechanism is in c/upstream.toml too"):
        report_words("c", str(tmp_path))
    (case / "repro" / "report.toml").write_text('fix = ["x.patch"]\n')
    with pytest.raises(KilltestError, match="unknown key fix"):
        report_words("c", str(tmp_path))


def test_the_framework_only_evidence_is_its_first_runs_exit_statuses_and_closing_counters(tmp_path, monkeypatch):
    case = tmp_path / "c"
    (case / "repro").mkdir(parents=True)
    (case / "repro" / "repro.sh").write_text("#!/bin/sh\n")
    (case / "repro" / "output.txt").write_text(
        "# sh repro.sh, three times\n# run 1\nscrapy 2.14.0\nstart 1 exit status: 137 (137 = SIGKILL)\nnoise\n"
        "start 2 exit status: 0\n    'finish_reason': 'finished',\nrows 0, distinct products 0 of 200, lost 200\n"
        "# run 2\nstart 1 exit status: 137 (137 = SIGKILL)\n")
    monkeypatch.setattr(case_report_repro, "CASES_FOLDER", str(tmp_path))
    shown = case_report_repro.evidence({"case": "c"})
    block = shown[shown.index("```") + 1:-2]
    assert block == ["# run 1", "start 1 exit status: 137 (137 = SIGKILL)", "start 2 exit status: 0",
                     "    'finish_reason': 'finished',", "rows 0, distinct products 0 of 200, lost 200"]


def test_expected_names_no_promise_where_the_framework_documents_the_limitation():
    facts = {"case": "scrapy-4106", "framework": "scrapy", "version": "2.19.0", "key": "2.19.0",
             "design": "scrapy-4106/design.toml"}
    waived = expected(facts, "documented limitation")
    assert waived.startswith("Expected: nothing after a SIGKILL.") and "jobs.rst" in waived
    assert expected(facts, "buggy").startswith("Expected, by what scrapy promises and the case's design holds it to:")


def test_a_report_written_at_a_commit_with_uncommitted_changes_says_it_is_not_of_record():
    facts: dict = {"case": "c", "version": "1", "upstream": [],
                   "outcome": {"measured_at": "t", "killtest_commit": "abc-dirty"}}
    assert any(line.startswith("**Not a run of record: killtest abc-dirty") for line in _written(facts, "buggy"))
    facts["outcome"]["killtest_commit"] = "abc"
    assert "at killtest abc (a clean commit)" in _written(facts, "buggy")[0]


def test_each_start_says_how_it_ended_killed_stopped_or_by_itself_with_its_status(tmp_path):
    history = tmp_path / "history"
    history.mkdir()
    (history / "run1.jsonl").write_text("\n".join(json.dumps(e) for e in [
        {"type": "process_started", "start": 0}, {"type": "kill", "start": 0, "point": "w3", "returncode": -9},
        {"type": "start_output", "start": 0, "stderr_tail": ["killed mid-write"]},
        {"type": "process_exited", "start": 1, "returncode": 1},
        {"type": "start_output", "start": 1, "stderr_tail": ["SyntaxError: Unexpected end of JSON input"]},
        {"type": "time_limit", "start": 2, "returncode": -9, "no_progress_s": 15.2},
        {"type": "process_exited", "start": 3, "returncode": 0}]) + "\n")
    exits = _exits(str(tmp_path))
    assert [("killed" in e, "stopped" in e, e.get("returncode")) for e in exits] == [
        (True, False, None), (False, False, 1), (False, True, None), (False, False, 0)]
    assert _crashes(exits) == [{"start": 1, "returncode": 1,
                                "stderr_tail": ["SyntaxError: Unexpected end of JSON input"]}]


def test_a_dirty_checkout_writes_no_report_into_results_but_may_write_one_elsewhere(tmp_path, monkeypatch):
    monkeypatch.setattr(case_report, "killtest_commit", lambda: "abc1234-dirty")
    with pytest.raises(KilltestError, match="abc1234-dirty has uncommitted changes"):
        case_report.require_clean_commit(os.path.join(ROOT, "results"))
    case_report.require_clean_commit(str(tmp_path))  # marked "not a run of record" in the report instead
    monkeypatch.setattr(case_report, "killtest_commit", lambda: "abc1234")
    case_report.require_clean_commit(os.path.join(ROOT, "results"))
