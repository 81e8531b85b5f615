"""What locating a kind of failure costs an exploration (issue 35: under 5% of it), and that the cheaper way names
the line the whole way does: a point run once more only as far as its kill (campaigns/locator.held_start)."""

from __future__ import annotations

import json
import shutil

import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.harness.campaigns.exploration import Exploration, explore_point
from killtest.harness.campaigns.locate import located, py_spy
from killtest.harness.campaigns.locator import held_start
from killtest.harness.design.registry import design_named
from killtest.harness.faults.points import parse_point
from killtest.harness.report.triage import locating_words
from killtest.harness.running.orchestrator import stage
from killtest.harness.running.runner import RunSettings
from killtest.harness.running.write_plans import RecordingCache, store_write_points

from .test_distinct_lines import COMMIT_LINE, RECORD_LINES, RECORD_THEN_DONE

SETTINGS = RunSettings(lease_s=0.2, time_limit_s=60)


@pytest.mark.slow
@pytest.mark.skipif(py_spy() is None or shutil.which("strace") is None, reason="needs py-spy and strace")
def test_a_point_run_again_only_as_far_as_its_kill_names_the_line_its_whole_run_names(tmp_path):
    """Issue 35's design, outside the repository: its first product's record file (the flush at one line, the
    `with` block's end at another) and the first write of its done mark's commit. Each point's stack read in a
    run only as far as its kill (one start, nothing checked) gives the words and the line that reading it in the
    point's whole run gives (two starts, checked): the cheaper rerun never names another line."""
    program = tmp_path / "scraper.py"
    shutil.copy(RECORD_THEN_DONE, program)
    spec = tmp_path / "design.toml"
    command = json.dumps(["python3", str(program), "--base", "{base_url}", "--out", "{store}"])
    spec.write_text(f'[design]\nname = "shop"\ndoes_not_promise = ["bounded_requests"]\ncommand = {command}\n\n'
                    '[store]\nkind = "json_files"\npath = "{work_dir}/dataset"\nkey = "sku"\n'
                    'fields = ["price", "name"]\n')
    design = design_named(str(spec))
    cache: RecordingCache = {}
    lines = set()
    with stage(build_catalog(1, 2), [design]) as on:
        written = [point.spec for point in store_write_points(design, on, SETTINGS, None, cache)]
        for spec_of in ("w11", "w12", "w13"):  # the record file's two writes, the commit's journal's first
            assert spec_of in written, written
            point = parse_point(spec_of, design)
            whole = located(design, lambda at=point: explore_point(design, on, SETTINGS, at, None, cache))
            histories: list = []
            held = located(design, lambda at=point, kept=histories: kept.append(held_start(design, on, SETTINGS, at,
                                                                                             None, cache)))
            assert held == whole, spec_of
            assert len(histories[0].of_type("process_started")) == 1  # the killed start only: none finishes
            assert [kill["point"] for kill in histories[0].of_type("kill")] == [spec_of]
            lines.add(int(held.line.rpartition(":")[2]))
    assert COMMIT_LINE in lines and len(lines) == 3 and lines - {COMMIT_LINE} <= RECORD_LINES, lines


def test_the_locating_share_is_of_the_time_its_seconds_were_summed_over():
    """locate_s sums -j's processes' locating: its share is of their time summed alike (jobs_s), not of the
    exploration's wall time, which two processes fill twice over. With -j 1 the two are one."""
    two = Exploration("shop", False, elapsed_s=50.0, locate_runs=1, located_in_run=3, locate_s=2.5, jobs_s=100.0)
    assert locating_words(two).endswith("2.5 s of the exploration's 50.0 s (2.5% of its processes' 100.0 s)")
    one = Exploration("shop", False, elapsed_s=100.0, locate_runs=1, located_in_run=3, locate_s=2.5, jobs_s=99.9)
    assert locating_words(one).endswith("2.5 s of the exploration's 100.0 s (2.5%)")
    before = Exploration("shop", False, elapsed_s=100.0, locate_runs=1, locate_s=2.5)  # a JSON without jobs_s
    assert locating_words(before).endswith("(2.5%)")
