"""The harness's trust benchmark (harness/bench/false_findings.py): its schedules and its result files.

The figures themselves come from long runs (results/bench/false-findings-*.md); here, one short run
writes both files with the same numbers, and one-worker schedules are the same for the same seed.
"""

import json

from killtest.harness.bench.false_findings import _one_worker_each, main
from killtest.harness.faults.schedule import timed_schedule


def test_one_worker_schedules_keep_the_delays_and_draw_the_same_workers_for_the_same_seed():
    plain = timed_schedule(3, 5, 0.2, 1.0)
    one = _one_worker_each(plain, 3)
    assert one == _one_worker_each(timed_schedule(3, 5, 0.2, 1.0), 3)
    assert [p.delay_s for p in one.points] == [p.delay_s for p in plain.points]
    assert all(1 <= p.worker <= 3 for p in one.points) and len({p.worker for p in one.points}) > 1


def test_a_short_findings_run_writes_json_and_markdown_with_the_same_figures(tmp_path):
    code = main(["findings", "--runs", "2", "--designs", "idempotent", "--listing-pages", "3", "--per-page", "10",
                 "--pace", "60", "--kill-delay", "0.1", "0.2", "--kills", "1", "--out", str(tmp_path)])
    figures = json.loads((tmp_path / "false-findings-figures.json").read_text())
    design = figures["designs"]["idempotent"]
    assert code == (1 if figures["false_findings"] else 0) and design["runs"] == 2
    assert design["kills_landed"] + design["proved_nothing"] >= 2  # every run either landed a kill or said so
    markdown = (tmp_path / "false-findings-figures.md").read_text()
    row = f"| idempotent | 2 | {design['runs_with_a_finding']} | {design['false_findings']}"
    assert row in markdown and "Command: `python -m killtest.harness.bench.false_findings findings" in markdown
