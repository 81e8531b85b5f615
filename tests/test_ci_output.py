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

import pytest

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


@pytest.mark.slow
def test_explore_reports_each_crash_point_and_the_replay_line_of_a_broken_one(tmp_path):
    summary = tmp_path / "summary.md"
    done = killtest("explore", "--design", "zoo-done-before-record", "--only", "r2,w68", *SMALL,
                    "--out", str(tmp_path), "--junit-xml", str(tmp_path / "explore.xml"),
                    cwd=str(tmp_path), env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 1, done.stderr
    found = json.loads((tmp_path / "explore-zoo-done-before-record.json").read_text())
    suite = ET.parse(tmp_path / "explore.xml").getroot().find("testsuite")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    broken = {o["point"] for o in found["outcomes"] if not o["valid"]}
    assert broken == {"w68"} and found["distinct_failures"] == 1
    # One failing case per distinct failure, naming the points it covers; a case per point that kept its promises.
    failed = [name for name, case in cases.items() if case.find("failure") is not None]
    assert set(cases) - set(failed) == {"r2"} and len(failed) == 1 and failed[0].startswith("failure 1: ")
    assert suite.get("failures") == "1"
    text = cases[failed[0]].find("failure").text
    assert "points (1): w68" in text and "killtest replay --design zoo-done-before-record --schedule w68" in text
    assert summary.read_text().startswith("# ")  # the explore report's Markdown, appended to the job summary


@pytest.mark.slow
def test_a_passing_run_writes_a_passing_report(tmp_path):
    done = killtest("run", "--design", "idempotent", "--runs", "2", "--schedule", "r3,r5", *SMALL,
                    "--no-plot", "--out", str(tmp_path), "--junit-xml", str(tmp_path / "run.xml"), cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    suite = ET.parse(tmp_path / "run.xml").getroot().find("testsuite")
    names = [case.get("name") for case in suite.iter("testcase")]
    assert len(names) == 2 and all(name.startswith("run ") for name in names)
    assert suite.get("failures") == "0"


def test_a_report_path_that_cannot_be_written_is_one_line(tmp_path):
    (tmp_path / "a-file").write_text("")
    done = killtest("run", "--design", "idempotent", "--runs", "1", "--out", str(tmp_path),
                    "--junit-xml", str(tmp_path / "a-file" / "run.xml"), cwd=str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and "--junit-xml" in done.stderr
    assert "Traceback" not in done.stderr


def test_version_is_the_installed_distributions(tmp_path):
    from importlib.metadata import version

    done = killtest("--version", cwd=str(tmp_path))
    assert done.returncode == 0 and done.stdout.strip() == f"killtest {version('killtest')}"


@pytest.mark.slow
def test_a_failed_run_of_a_users_design_gets_a_replay_line_that_works_as_printed(tmp_path):
    """The report speaks of the design that ran: no article columns, each failed run's replay line, which
    reproduces the failure when pasted in another directory."""
    done = killtest("run", "--design", "zoo-memory-frontier", "--runs", "1", "--schedule", "r5", *SMALL,
                    "--no-plot", "--out", str(tmp_path / "out"), "--junit-xml", str(tmp_path / "run.xml"),
                    cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr
    report = (tmp_path / "out" / "killtest.md").read_text()
    assert "## Run by run\n" in report and "published" not in report.split("## Records")[0]
    line = next(text for text in done.stderr.splitlines() if text.startswith("replay zoo-memory-frontier run 1: "))
    replay = line.split(": ", 1)[1]
    assert f"`{replay}`" in report
    failure = ET.parse(tmp_path / "run.xml").getroot().find("testsuite/testcase/failure")
    assert f"replay: {replay}" in failure.text
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    words = replay.split()
    assert words[:2] == ["killtest", "replay"]
    again = killtest(*words[1:], "--out", str(elsewhere / "out"), cwd=str(elsewhere))
    assert again.returncode == 1 and "broke bounded_requests" in again.stderr


def test_the_plot_title_says_what_the_runs_had():
    from killtest.harness.report.campaign_plot import plot_title

    assert plot_title({"kills": 3, "seed": 7, "designs": ["a", "b"]}) == \
        "killtest: 3 kill points a run (seed 7), the same schedule for every design"
    assert plot_title({"kills": 2, "schedule": "r5,w3", "designs": ["mine"]}) == "killtest: schedule r5,w3, one design"
