"""Crash points and fuzz cases as pytest items, spread by pytest-xdist: the same verdicts as serially.

A user's test file parametrized with killtest.crash_points and killtest.fuzz_examples, run by pytester
in a subprocess three ways: serially, with `-n 2`, and with two `--tx popen` workers (how machines
are named with `--tx ssh=...`). Each item passes or fails by itself; the three runs must agree item by
item, and the crash point known to lose a record must fail in each.
"""

from __future__ import annotations

import json
import re

import pytest

pytest_plugins = ["pytester"]
pytest.importorskip("xdist")

USER_TEST = '''
import pytest
from killtest import crash_points, explore, fuzz_example, fuzz_examples

DESIGN = "zoo-done-before-record"
OPTIONS = {"listing_pages": 2, "per_page": 3}
# Request and line points (exact on every recording), every 6th, and the store write known to lose a record.
# Late store writes (and their after-twins, aw<n>) are left out: their numbering can shift by one between two
# recordings of this design (each item makes its own), an open problem of file-store w points noted in
# docs/how-to/pytest.md.
POINTS = sorted(set([p for p in crash_points(DESIGN, **OPTIONS) if not p.startswith(("w", "aw"))][::6]) | {"w68"})


@pytest.mark.parametrize("point", POINTS)
def test_crash_point(point, tmp_path):
    explore(DESIGN, only=point, out=tmp_path, **OPTIONS).assert_passed()


@pytest.mark.parametrize("example", fuzz_examples(DESIGN, examples=3, seed=3), ids=str)
def test_fuzz_example(example, tmp_path):
    fuzz_example(DESIGN, example, out=tmp_path).assert_passed()
'''


def _outcomes(result) -> dict[str, str]:
    """item id -> PASSED or FAILED, from `-rA`'s short summary (xdist and serial print it alike)."""
    found = {}
    for line in result.outlines:
        match = re.match(r"^(PASSED|FAILED) (\S+::\S+)", line)
        if match:
            found[match.group(2)] = match.group(1)
    return found


@pytest.mark.slow
def test_xdist_workers_reach_the_same_verdicts_as_a_serial_run(pytester):
    pytester.makepyfile(test_user=USER_TEST)
    serial = pytester.runpytest_subprocess("-rA", "-p", "no:cacheprovider")
    spread = pytester.runpytest_subprocess("-rA", "-v", "-p", "no:cacheprovider", "-n", "2")
    machines = pytester.runpytest_subprocess("-rA", "-p", "no:cacheprovider", "--dist", "load",
                                             "--tx", "popen", "--tx", "popen")
    by_serial, by_spread, by_machines = _outcomes(serial), _outcomes(spread), _outcomes(machines)
    assert len(by_serial) >= 6, serial.outlines[-30:]
    assert by_serial == by_spread == by_machines
    assert by_serial["test_user.py::test_crash_point[w68]"] == "FAILED"
    assert "killtest replay --design zoo-done-before-record --schedule w68" in "\n".join(spread.outlines)
    assert re.search(r"\[gw1\]|gw1", "\n".join(spread.outlines))  # the items really went to two workers


FUZZ_TEST = '''
import pytest


# Two examples: with either seed the second already breaks a promise (the first is always r1 on 1x1, which
# passes), and shrinks in a few runs; six examples made seed 1 shrink another failure in 33 runs.
@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz(killtest, seed):
    killtest.fuzz("zoo-done-before-record", examples=2, seed=seed, jobs=1).assert_passed()
'''


@pytest.mark.slow
def test_xdist_workers_share_one_fuzz_failure_database_across_sessions(pytester):
    pytester.makepyfile(test_fuzzing=FUZZ_TEST)
    database = pytester.path / "db"
    first = pytester.runpytest_subprocess("-rA", "-n", "2", "--killtest-database", str(database),
                                          "--killtest-out", "first")
    assert first.ret == 1, first.outlines[-30:]
    assert re.search(r"\[gw1\]|gw1", "\n".join(first.outlines))
    saved = sorted(database.rglob("*.json"))
    assert saved and len({p.parent.parent for p in saved}) == 1  # one design, one fingerprint: one folder
    assert all(json.loads(p.read_text())["schedule"] for p in saved)  # whole files, though two workers wrote
    second = pytester.runpytest_subprocess("-rA", "-n", "2", "--killtest-database", str(database),
                                           "--killtest-out", "second")
    assert second.ret == 1
    results = [json.loads(p.read_text()) for p in (pytester.path / "second").rglob("fuzz-*.json")]
    assert len(results) == 2
    for result in results:  # each test, on its own worker, replayed what both saved first and stopped there
        replayed = result["database"]["replayed"]
        assert {(r["schedule"], r["catalog"]) for r in replayed} == {
            (d["schedule"], d["catalog"]) for d in (json.loads(p.read_text()) for p in saved)}
        assert "still fails" in [r["verdict"] for r in replayed]
        assert len(result["trials"]) == len(replayed)


RESUMABLE = '''
import os

import pytest


@pytest.mark.parametrize("n", range(6))
def test_point(n):
    assert n != 4


def test_crashes_its_worker():
    if os.environ.get("CRASH") == "1":
        os._exit(9)  # the worker dies under the item, as on a host that is killed
'''


@pytest.mark.slow
def test_killtest_resume_keeps_verdicts_and_a_rerun_runs_only_the_items_without_one(pytester, monkeypatch):
    pytester.makepyfile(test_resumable=RESUMABLE)
    verdicts = pytester.path / "verdicts.jsonl"
    monkeypatch.setenv("CRASH", "1")
    first = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--max-worker-restart", "1",
                                          f"--killtest-resume={verdicts}")
    kept = [json.loads(line) for line in verdicts.read_text().splitlines()]
    assert first.ret == 1
    # Every item but the one whose worker crashed has its verdict (xdist's crash report is no verdict).
    assert {k["nodeid"].split("::")[1]: k["outcome"] for k in kept} == {
        **{f"test_point[{n}]": "passed" for n in range(6) if n != 4}, "test_point[4]": "failed"}
    assert {k["worker"] for k in kept} <= {"gw0", "gw1", "gw2"}
    monkeypatch.setenv("CRASH", "0")
    rerun = pytester.runpytest_subprocess("-rA", "-p", "no:cacheprovider", "-n", "2", f"--killtest-resume={verdicts}")
    assert "killtest resume: 6 verdicts kept" in "\n".join(rerun.outlines)
    assert [line for line in rerun.outlines if line.startswith("PASSED")] == [
        "PASSED test_resumable.py::test_crashes_its_worker"]
    assert rerun.ret == 1  # test_point[4] failed in the first session: the campaign has failed
    serial = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--killtest-resume={verdicts}")
    assert serial.ret == 1 and "7 deselected" in "\n".join(serial.outlines)  # without xdist too
