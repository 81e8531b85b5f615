"""Comparing a campaign with a saved baseline: what counts as a regression, for whom, and by how much."""

import json

import pytest

from killtest.harness.check.baseline import Thresholds, compare, regressions
from killtest.harness.errors import KilltestError
from killtest.harness.report.baseline_file import load_baseline


def run(design="idempotent", rows=500, repeated=3, kills=10, wall=6.0, missing=0, unexpected=0, valid=True,
        findings=()):
    return {"design": design, "duplicate_ratio": rows / 500, "repeated_requests": repeated, "kills": kills,
            "wall_s": wall, "missing_records": missing, "unexpected_records": unexpected, "valid": valid,
            "findings": list(findings)}


CLAIMS = {"idempotent": True, "naive": False}


def verdicts(baseline, current, **thresholds):
    return {(d.design, d.figure): d.verdict for d in compare(baseline, current, CLAIMS, Thresholds(**thresholds))}


def test_the_same_figures_are_no_regression():
    diffs = compare([run(), run()], [run(), run()], CLAIMS)
    assert regressions(diffs) == [] and {d.verdict for d in diffs} == {"ok"}


@pytest.mark.parametrize("changed, figure", [
    (dict(rows=501), "rows per product, worst run"),
    (dict(repeated=9), "repeated requests per landed kill"),
    (dict(missing=1, valid=False, findings=["lost"]), "lost records"),
    (dict(unexpected=2), "wrong or unexpected records"),
    (dict(wall=9.1), "mean wall s per run"),
    (dict(valid=False, findings=["liveness"]), "findings the baseline did not have"),
])
def test_a_design_that_claims_idempotence_regresses_on_each_figure(changed, figure):
    assert verdicts([run()], [run(**changed)])[("idempotent", figure)] == "WORSE"


def test_thresholds_decide_how_much_slower_and_how_many_more_repeats_still_pass():
    assert verdicts([run()], [run(wall=8.9)])[("idempotent", "mean wall s per run")] == "ok"  # under +50%
    assert verdicts([run()], [run(wall=8.9)], max_slowdown_pct=20)[("idempotent", "mean wall s per run")] == "WORSE"
    assert verdicts([run()], [run(repeated=7)])[("idempotent", "repeated requests per landed kill")] == "ok"


def test_a_controls_rows_and_repeats_are_shown_not_judged_but_its_lost_records_are():
    now = verdicts([run("naive", rows=1300, repeated=800)], [run("naive", rows=2400, repeated=1900, missing=1)])
    assert now[("naive", "rows per product, worst run")] == "shown (control)"
    assert now[("naive", "repeated requests per landed kill")] == "shown (control)"
    assert now[("naive", "lost records")] == "WORSE"


def test_a_design_missing_from_the_baseline_is_new_not_a_regression():
    diffs = compare([run("naive")], [run("mine")], CLAIMS)
    assert {d.verdict for d in diffs} == {"new design"} and regressions(diffs) == []


@pytest.mark.parametrize("content, says", [
    (None, "does not exist"), ("{not json", "not a readable JSON file"), ('{"runs": []}', "holds no runs"),
])
def test_a_bad_baseline_file_is_a_clear_error(tmp_path, content, says):
    path = tmp_path / "baseline.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(KilltestError, match=says):
        load_baseline(str(path))


def test_a_saved_campaign_loads_as_a_baseline(tmp_path):
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"runs": [{**run(), "wall_s": 5.0}]}))
    assert load_baseline(str(path))[0]["wall_s"] == 5.0
