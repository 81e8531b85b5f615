"""Fuzz, like explore, gives one failure per bug at the user's own line (issue 35): a fuzzed schedule's kill at a
store write is located in the trial's own run (campaigns/fuzz_locate.py), and the failures are grouped by that line.
Fixed schedules on a fixed catalog (the writes picked from the recording), so the test is deterministic: issue 35's
two-mistake design, its commit killed inside at three of its system calls of two products, its torn record file at
both its pieces of two products. Two bugs, two failures, each at its line(s); a schedule whose kills are not all at
a known line (a request point) keeps its kind of place.
"""

from __future__ import annotations

import json
import shutil

import pytest

from killtest.harness.campaigns.fuzzing import Case, FuzzResult, bench
from killtest.harness.campaigns.locate import py_spy
from killtest.harness.design.registry import design_named
from killtest.harness.faults.points.line import shown_path
from killtest.harness.report.triage import fuzz_locating_words, trial_failures
from killtest.harness.running.runner import RunSettings
from tests.test_distinct_lines import COMMIT_LINE, RECORD_LINES, RECORD_THEN_DONE


@pytest.mark.slow
@pytest.mark.skipif(py_spy() is None or shutil.which("strace") is None, reason="needs py-spy and strace")
def test_fuzzed_kills_at_store_writes_are_grouped_at_the_users_line_as_explore_groups_them(tmp_path):
    spec = tmp_path / "design.toml"
    command = json.dumps(["python3", RECORD_THEN_DONE, "--base", "{base_url}", "--out", "{store}"])
    spec.write_text(f'[design]\nname = "shop"\ndoes_not_promise = ["bounded_requests"]\ncommand = {command}\n\n'
                    '[store]\nkind = "json_files"\npath = "{work_dir}/dataset"\nkey = "sku"\n'
                    'fields = ["price", "name"]\n')
    design = design_named(str(spec))
    with bench(design, RunSettings(lease_s=0.2, time_limit_s=60), prefork=False) as on:
        with on.on(1, 2) as stage:
            on.store_writes(stage, 1, 2)  # the first start's recording, which aims every w<n> below
            recording = on.cache(1, 2)[(design.name, "")]
            calls = list(enumerate(recording.calls, 1))
            torn = [n for n, call in calls if call.goes_on]  # the second piece of each record file's write
            journal = [n for n, call in calls if call.paths == ("progress.sqlite-journal",) and n > torn[0]]
            database = [n for n, call in calls if call.paths == ("progress.sqlite",) and n > torn[0]]
            assert len(torn) == 2, [(c.syscall, c.paths) for _, c in calls]
            schedules = [f"w{torn[0] - 1}", f"w{torn[0]}", f"w{torn[1] - 1}", f"w{torn[1]}",  # both pieces, twice
                         f"w{journal[0]}", f"w{database[0]}", f"w{journal[-1]}",  # inside the two commits
                         f"w{journal[0]},r3"]  # the next start killed at a request: not all its kills are at a line
            trials = [on.trial(Case(1, 2, schedule), stage, locate=True) for schedule in schedules]
    assert all(trial.problems for trial in trials), [(t.case.schedule, t.problems) for t in trials]
    failures = trial_failures(trials)
    program = shown_path(RECORD_THEN_DONE)
    at_lines = {f.lines: [b.point for b in f.points] for f in failures if f.lines}
    commit = (f"{program}:{COMMIT_LINE}",)
    assert at_lines[commit] == schedules[4:7], [(f.lines, f.place, f.points_text()) for f in failures]
    [torn_lines] = [lines for lines in at_lines if lines != commit]
    assert len(torn_lines) == 2 and {int(line.rpartition(":")[2]) for line in torn_lines} <= RECORD_LINES
    assert sorted(at_lines[torn_lines]) == sorted(schedules[:4])
    [unplaced] = [f for f in failures if not f.lines]  # r3 landed too: grouped by its kinds of place
    assert [b.point for b in unplaced.points] == [schedules[-1]] and "request" in unplaced.place
    [at_commit] = [f for f in failures if f.lines == commit]
    assert all(f"in mark_done ({RECORD_THEN_DONE}:{COMMIT_LINE})" in b.where for b in at_commit.points)
    assert len(failures) == 3 and all(trial.located_s > 0 for trial in trials)
    assert "located in their own runs" in fuzz_locating_words(FuzzResult("shop", trials=trials, elapsed_s=60.0))
