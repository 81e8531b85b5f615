"""The fuzz failure database (harness/campaigns/fuzz_database.py): failures kept per design fingerprint and
replayed first, as Hypothesis' example database keeps and replays failing examples.

Real fuzzes through the installed command (a subprocess, its exit status and output), real runs of the
saved schedules, real processes saving into one database at once.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from killtest.harness.campaigns.fuzz_database import FailureDatabase, fingerprint
from killtest.harness.campaigns.fuzzing import Case, Trial
from killtest.harness.design.model import PROJECT_ROOT
from killtest.harness.design.registry import design_named

needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")


def fuzz(*args):
    return subprocess.run([sys.executable, "-m", "killtest", "fuzz", "--seed", "1", "-j", "1", *args],
                          capture_output=True, text=True, timeout=600, cwd=PROJECT_ROOT,
                          env={**os.environ, "PYTHONPATH": PROJECT_ROOT})


@pytest.mark.slow
@needs_strace
def test_a_second_fuzz_replays_the_saved_failures_first_and_stops_at_one_that_still_fails(tmp_path):
    # Seed 1's third case fails with a timed point in it (a line point and a redeploy, on 3x2), which shrinks in
    # 4 runs to an exact line point on 2x1: two failures saved, one of the search and the shrunk one. (Eight cases
    # found two more and shrank another in 33 runs, to the same verdicts.)
    database = tmp_path / "db"
    first = fuzz("--design", "zoo-done-before-record", "--examples", "3", "--out", str(tmp_path / "a"),
                 "--database", str(database))
    assert first.returncode == 1, first.stderr[-2000:]
    saved = sorted(database.rglob("*.json"))
    found = json.loads((tmp_path / "a" / "fuzz-zoo-done-before-record.json").read_text())
    failing = {(t["case"]["schedule"], t["case"]["pages"], t["case"]["per_page"]) for t in found["trials"]
               if t["problems"]} | {(found["shrunk"]["case"]["schedule"], found["shrunk"]["case"]["pages"],
                                     found["shrunk"]["case"]["per_page"])}
    on_disk = {(d["schedule"], d["pages"], d["per_page"]) for d in (json.loads(p.read_text()) for p in saved)}
    assert on_disk == failing  # each distinct failure once: those of the search and the shrunk one
    assert found["database"]["new_failures_saved"] == len(saved) and found["database"]["replayed"] == []

    second = fuzz("--design", "zoo-done-before-record", "--examples", "3", "--out", str(tmp_path / "b"),
                  "--database", str(database))
    assert second.returncode == 1, second.stderr[-2000:]
    again = json.loads((tmp_path / "b" / "fuzz-zoo-done-before-record.json").read_text())
    replayed = again["database"]["replayed"]
    assert {(r["schedule"], r["catalog"]) for r in replayed} == {(s, f"{p}x{n}") for s, p, n in failing}
    # The shrunk failure is exact: it fails again, and the search is skipped (every trial is a replay).
    shrunk = found["shrunk"]["case"]["schedule"]
    assert next(r for r in replayed if r["schedule"] == shrunk)["verdict"] == "still fails"
    assert len(again["trials"]) == len(replayed) and again["shrink_runs"] == 0
    assert f"saved failure {shrunk} on " in second.stderr and ": still fails: lost" in second.stderr
    assert "replay it: killtest replay --design zoo-done-before-record --schedule " in second.stderr
    assert again["database"]["new_failures_saved"] == 0


@pytest.mark.slow
def test_a_saved_failure_that_now_passes_is_said_and_forgotten_and_the_search_runs(tmp_path):
    # A failure as a broken build of the design left it (the design has the fingerprint it has today): r3
    # on 1x2 products. The idempotent design keeps every promise there, so the failure is fixed.
    design = design_named("idempotent")
    database = FailureDatabase(str(tmp_path / "db"), design)
    assert database.save(Trial(Case(1, 2, "r3"), ["lost 1 of 2 records: SKU-66549 (broke no_lost_records)"], True))
    assert not database.save(Trial(Case(1, 2, "r3"), ["lost 1 of 2 records"], True))  # already kept
    done = fuzz("--design", "idempotent", "--examples", "3", "--out", str(tmp_path / "out"),
                "--database", str(tmp_path / "db"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "saved failure r3 on 1x2: now passes" in done.stderr
    result = json.loads((tmp_path / "out" / "fuzz-idempotent.json").read_text())
    assert [r["verdict"] for r in result["database"]["replayed"]] == ["now passes"]
    assert result["examples"] == 3  # the search ran after the replay
    assert database.saved() == []  # fixed: forgotten, as Hypothesis deletes an example that passes


@pytest.mark.slow
def test_the_default_database_is_under_the_results_folder(tmp_path):
    done = fuzz("--design", "idempotent", "--examples", "1", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((tmp_path / "fuzz-idempotent.json").read_text())["database"]["dir"].startswith(
        str(tmp_path / "fuzz-database" / "idempotent-"))


def test_the_fingerprint_follows_the_spec_and_the_program_not_the_folder(tmp_path):
    for name in ("design.toml", "scraper.mjs"):
        shutil.copy(os.path.join(PROJECT_ROOT, "examples", "node-resume", name), tmp_path / name)
    spec = str(tmp_path / "design.toml")
    before = fingerprint(design_named(spec))
    assert fingerprint(design_named(spec)) == before
    with open(tmp_path / "scraper.mjs", "a") as program:
        program.write("\n// a change to the scraper\n")
    changed = fingerprint(design_named(spec))
    assert changed != before
    with open(spec, "a") as text:
        text.write("\n# a change to the spec\n")
    assert fingerprint(design_named(spec)) not in (before, changed)
    # Two designs, two keys; the module's source is part of a Python design's.
    assert fingerprint(design_named("idempotent")) != fingerprint(design_named("naive"))


# What an xdist worker does when its fuzz fails: save its failures (every worker shares w68 on 1x2). A
# plain subprocess each, not multiprocessing, whose resource tracker would outlive the test as a child of
# the test process (tests/test_runner.py holds that no run leaves a child behind).
_SAVE_SOME = """
import sys
from killtest.harness.design.registry import design_named
from killtest.harness.campaigns.fuzz_database import FailureDatabase
from killtest.harness.campaigns.fuzzing import Case, Trial
root, worker = sys.argv[1], int(sys.argv[2])
database = FailureDatabase(root, design_named("zoo-done-before-record"))
for n in range(20):
    database.save(Trial(Case(1, 2, "w68"), ["lost 1 of 2 records (broke no_lost_records)"], True))
    database.save(Trial(Case(2, 3, f"r{n},w{worker}"), ["lost a record (broke no_lost_records)"], True))
"""


@pytest.mark.slow
def test_processes_saving_into_one_database_at_once_leave_whole_files_one_per_failure(tmp_path):
    root = str(tmp_path / "db")
    workers = [subprocess.Popen([sys.executable, "-c", _SAVE_SOME, root, str(w)], cwd=PROJECT_ROOT) for w in range(4)]
    for worker in workers:
        assert worker.wait(60) == 0
    database = FailureDatabase(root, design_named("zoo-done-before-record"))
    saved = database.saved()
    assert len(saved) == 1 + 4 * 20  # the shared failure once, every other one once
    assert [s.case.schedule for s in saved].count("w68") == 1
    assert not [p for p in (tmp_path / "db").rglob("*") if p.is_file() and p.suffix != ".json"]  # no temp left
