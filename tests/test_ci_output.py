"""--junit-xml and the GitHub job summary: what CI reads must agree with what the command found.

Real commands on a small catalog: explore on the done-before-record mistake at two crash points
(one that breaks it, one that does not), a run of the correct design, the zoo's document shape,
and the one-line errors for a report folder that does not exist.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

from killtest.harness.report.junit import Case, junit_xml

SMALL = ["--listing-pages", "2", "--per-page", "3"]


def killtest(*args: str, cwd: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "killtest", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, timeout=300)


def test_a_failed_case_carries_its_findings_and_escapes_them():
    text = junit_xml("explore", [Case("killtest.explore.d", "w5", failure='lost 1 of 6 <records> & "more"',
                                      details="lost 1\nreplay: killtest replay --schedule 'w5'"),
                                 Case("killtest.explore.d", "r1"),
                                 Case("killtest.explore.d", "r9", skipped="the crawl finished before this point")])
    suite = ET.fromstring(text).find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    failure = suite.find("testcase[@name='w5']/failure")
    assert failure.get("message") == 'lost 1 of 6 <records> & "more"'
    assert "replay: killtest replay --schedule 'w5'" in failure.text


def test_explore_reports_each_crash_point_and_the_replay_line_of_a_broken_one(tmp_path):
    summary = tmp_path / "summary.md"
    done = killtest("explore", "--design", "zoo-done-before-record", "--only", "r2,w68", *SMALL,
                    "--out", str(tmp_path), "--junit-xml", str(tmp_path / "explore.xml"),
                    cwd=str(tmp_path), env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 1, done.stderr
    found = json.loads((tmp_path / "explore-zoo-done-before-record.json").read_text())
    suite = ET.parse(tmp_path / "explore.xml").getroot().find("testsuite")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {o["point"] for o in found["outcomes"]} == {"r2", "w68"}
    broken = {o["point"] for o in found["outcomes"] if not o["valid"]}
    assert broken == {"w68"}
    assert {name for name, case in cases.items() if case.find("failure") is not None} == broken
    assert suite.get("failures") == "1"
    assert "killtest replay --design zoo-done-before-record --schedule w68" in cases["w68"].find("failure").text
    assert summary.read_text().startswith("# ")  # the explore report's Markdown, appended to the job summary


def test_a_passing_run_writes_a_passing_report(tmp_path):
    done = killtest("run", "--design", "idempotent", "--runs", "2", "--schedule", "r3,r5", *SMALL,
                    "--no-plot", "--out", str(tmp_path), "--junit-xml", str(tmp_path / "run.xml"), cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    suite = ET.parse(tmp_path / "run.xml").getroot().find("testsuite")
    names = [case.get("name") for case in suite.iter("testcase")]
    assert len(names) == 2 and all(name.startswith("run ") for name in names)
    assert suite.get("failures") == "0"


def test_a_report_folder_that_does_not_exist_is_one_line(tmp_path):
    done = killtest("run", "--design", "idempotent", "--runs", "1", "--out", str(tmp_path),
                    "--junit-xml", str(tmp_path / "missing" / "run.xml"), cwd=str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and "--junit-xml" in done.stderr
    assert "Traceback" not in done.stderr


def test_version_is_the_installed_distributions(tmp_path):
    from importlib.metadata import version

    done = killtest("--version", cwd=str(tmp_path))
    assert done.returncode == 0 and done.stdout.strip() == f"killtest {version('killtest')}"
