"""The public API (killtest/api.py): real runs, explores and a fuzz on small catalogs, verdicts as data."""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import sys

import pytest

import killtest
from killtest.harness.cli import build_parser

ZOO = "zoo-done-before-record"
ZOO_LINE = "l:scrapers/zoo/done_before_record.py:complete+3:2"  # between its two commits: a record is lost
SMALL = {"listing_pages": 2, "per_page": 3, "runs": 1, "lease": 0.5}  # a killed start's lease: half a second


def test_import_killtest_loads_no_harness_until_a_name_is_used():
    code = ("import sys, killtest; assert not [m for m in sys.modules if m.startswith('killtest.')], sys.modules;"
            " killtest.run; assert 'killtest.api' in sys.modules; print(killtest.__version__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() and done.stdout.strip() != "0+unknown"


def test_load_design_by_name_and_by_path():
    by_name = killtest.load_design(ZOO)
    by_path = killtest.load_design(by_name.spec_file)
    assert by_name.name == by_path.name == ZOO
    assert "no_lost_records" in [p.value for p in by_path.promises]
    with pytest.raises(killtest.KilltestError, match="unknown design 'no-such-design'"):
        killtest.load_design("no-such-design")


def test_explore_finds_the_lost_record_and_says_how_to_replay_it(tmp_path):
    result = killtest.explore(ZOO, only=f"r3,{ZOO_LINE}", jobs=1, out=tmp_path, log=io.StringIO())
    assert (result.command, result.designs, result.validity, result.passed) == ("explore", (ZOO,), "invalid", False)
    # The record is lost, and its page was fetched and marked done: a hole (harness/check/holes.py) too.
    assert [(f.where, f.promise) for f in result.findings] == [(f"crash point {ZOO_LINE}", "no_lost_records")] * 2
    assert result.findings[0].message.startswith("lost 1 of 6 records")
    assert result.findings[1].message.startswith("1 lost record is a hole (SKU-")  # one: singular
    assert "its page was fetched" in result.findings[1].message
    assert result.replay is not None and result.replay.startswith("killtest replay --design zoo-done-before-record")
    assert f"--schedule {ZOO_LINE}" in result.replay
    assert result.results_dir == str(tmp_path)
    assert sorted(os.path.basename(f) for f in result.files) == [f"explore-{ZOO}.html", f"explore-{ZOO}.json",
                                                                       f"explore-{ZOO}.md"]
    assert result.data["points"] == 2 and result.data["broken"] == 1
    with pytest.raises(killtest.KilltestFailed) as failed:
        result.assert_passed()
    assert isinstance(failed.value, AssertionError) and failed.value.result is result
    assert "broke no_lost_records" in str(failed.value) and result.replay in str(failed.value)


@pytest.mark.slow
def test_a_run_on_an_exact_schedule_replays_exactly(tmp_path):
    log = io.StringIO()
    result = killtest.run(ZOO, schedule=ZOO_LINE, out=tmp_path, log=log, **SMALL)
    assert result.validity == "invalid" and not result.passed
    assert {(f.where, f.promise) for f in result.findings} >= {(f"run 1 (schedule {ZOO_LINE})", "no_lost_records")}
    # The replay line is the command line's own, and it parses back with the same settings.
    words = shlex.split(result.replay)
    args = build_parser().parse_args(words[1:])
    assert (args.command, args.design, args.schedule, args.lease, args.strict) == ("replay", [ZOO], ZOO_LINE, 0.5,
                                                                                   False)
    assert (args.listing_pages, args.per_page) == (2, 3)
    assert result.data["runs"][0]["missing_records"] == 1
    # The result files record the equivalent command, not the test runner's argv.
    recorded = shlex.split(result.data["command"])
    assert recorded[:4] == ["killtest", "run", "--design", ZOO] and f"--schedule {ZOO_LINE}" in shlex.join(recorded)
    assert f"[{ZOO} run 1/1" in log.getvalue()


@pytest.mark.slow
def test_a_correct_design_passes_with_no_findings(tmp_path):
    result = killtest.run("idempotent", schedule="r3,r6", out=str(tmp_path), log=io.StringIO(), **SMALL)
    assert (result.validity, result.passed, result.findings, result.replay) == ("valid", True, (), None)
    assert os.path.join(str(tmp_path), "killtest.json") in result.files
    assert result.data["runs"][0]["correct_records"] == 6
    result.assert_passed()


@pytest.mark.slow
def test_fuzz_returns_its_search_as_data(tmp_path):
    result = killtest.fuzz("idempotent", examples=2, seed=3, jobs=1, out=tmp_path, log=io.StringIO())
    assert (result.command, result.validity, result.findings, result.replay) == ("fuzz", "valid", (), None)
    assert result.data["examples"] == 2


@pytest.mark.parametrize("call,message", [
    (lambda: killtest.run("idempotent", bogus=1), "killtest run takes no option bogus"),
    (lambda: killtest.run("idempotent", runs=0), "argument --runs: must be more than zero, not 0"),
    (lambda: killtest.explore("idempotent", listing_pages="two"), "argument --listing-pages: expected a number"),
    (lambda: killtest.fuzz("no-such-design", examples=1), "unknown design 'no-such-design'"),
])
def test_bad_input_is_one_line_killtest_error(call, message):
    with pytest.raises(killtest.KilltestError) as error:
        call()
    assert message in str(error.value) and "\n" not in str(error.value)
