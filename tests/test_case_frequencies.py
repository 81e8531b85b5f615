"""A case release's verdict rests on several runs: its aimed schedule repeated and timed kills spread over its
crawl, each a `killtest run` of its own, summed up as frequencies (campaigns/case_runs.py,
report/case_frequencies.py). The runs here are real: killtest runs a zoo design on a small shop, and every
figure the tests compare with is read back from the killtest.json files those runs wrote."""

from __future__ import annotations

import json
import os
import statistics

import pytest

from killtest.harness.campaigns.case_envs import CaseEnv
from killtest.harness.campaigns.case_runs import planned_runs, repeat_of, run_release_sets, without
from killtest.harness.design.case_spec import Case, Release, load_case
from killtest.harness.errors import KilltestError
from killtest.harness.report.case_frequencies import aggregate, frequency_words, release_frequencies
from killtest.harness.report.case_readme_blocks import measured_block
from killtest.harness.report.case_table import _readme_tables, analyses_page

# zoo-done-before-record marks a page done before it stores the page's record: killed on entering the store
# write w68 of this two-page shop of three products a page, it loses the record (test_ci_output's point).
ARGS = ("--runs", "1", "--schedule", "w68", "--listing-pages", "2", "--per-page", "3", "--time-limit", "60")


def _case(folder: str, **how) -> Case:
    buggy = Release("1.0", ("zoo==1.0",), ("lost",), "zoo-done-before-record", role="buggy")
    fixed = Release("2.0", ("zoo==2.0",), (), "idempotent", role="fixed")
    return Case(name="zoo-case", folder=folder, title="a zoo mistake as a case", framework="zoo",
                upstream=("https://example.org/zoo/1",), status="fixed", runtime="python", args=ARGS,
                releases=(buggy, fixed), **how)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """Both releases of the zoo case, 2 aimed and 2 spread-kill runs each (two kills a spread run), 2 at a time."""
    root = tmp_path_factory.mktemp("zoo-case")
    (root / "env" / "bin").mkdir(parents=True)  # killtest itself runs from sys.executable: the env adds nothing
    env = CaseEnv("python", str(root / "env"))
    case = _case(str(root), spread_kills=2, spread_note="two kills a spread run keep the test short")
    out = str(root / "results")
    return case, [run_release_sets(case, rel, env, out, lambda line: None, repeat=2, jobs=2) for rel in case.releases]


def _campaign(folder: str) -> dict:
    with open(os.path.join(folder, "killtest.json"), encoding="utf-8") as src:
        return json.load(src)


def test_each_run_is_a_killtest_run_of_its_own_seed_in_a_folder_of_its_own(measured):
    case, (buggy, _) = measured
    folders = [r["folder"] for r in buggy.runs]
    assert [os.path.basename(f) for f in folders] == ["aimed-1", "aimed-2", "spread-1", "spread-2"]
    for record in buggy.runs:
        settings = _campaign(record["folder"])["settings"]
        assert settings["runs"] == 1
        if record["kind"] == "aimed":  # an exact schedule draws nothing from a seed
            assert settings["schedule"] == "w68"
        else:  # timed kills of the run's own seed, as many as the case declares, none at the aimed write; a case
            # with its own spread plan keeps its time limit
            assert not settings["schedule"] and settings["kills"] == 2 and settings["seed"] == record["index"]
            assert settings["time_limit_s"] == 60


def test_the_runs_records_are_the_figures_their_killtest_json_holds(measured):
    _, (buggy, _) = measured
    for record in buggy.runs:
        run = _campaign(record["folder"])["runs"][0]
        assert (record["lost"], record["duplicated"], record["kills_landed"], record["findings"]) == (
            run["missing_records"], run["duplicated_records"], run["kills"], run["findings"])
        assert record["killed_storing"] == sum(s["phase"] == "stored records" for s in run["killed_starts"])
        assert record["flagged"] == (run["validity"] == "invalid")


def test_the_buggy_release_is_flagged_in_every_aimed_run_and_the_fixed_one_in_none(measured):
    _, (buggy, fixed) = measured
    assert buggy.frequencies["aimed"]["flagged"] == 2 and buggy.as_expected and "lost" in buggy.got
    assert fixed.frequencies["aimed"]["flagged"] == 0 and fixed.as_expected and fixed.validity == "valid"
    assert buggy.replay and "--schedule w68" in buggy.replay  # the aimed run it reproduces


def test_a_sets_summary_and_words_are_its_runs_figures(measured):
    _, (buggy, _) = measured
    for kind in ("aimed", "spread"):
        runs = [r for r in buggy.runs if r["kind"] == kind]
        summary = aggregate(runs, buggy.expect)
        assert summary == buggy.frequencies[kind]
        lost = [r["lost"] for r in runs]
        assert summary["flagged"] == sum(r["flagged"] for r in runs)
        assert (summary["lost"]["min"], summary["lost"]["max"]) == (min(lost), max(lost))
        assert summary["lost"]["median"] == statistics.median(lost)
        words = frequency_words(summary, kind, buggy.products)
        assert words.startswith(f"flagged in {summary['flagged']} of 2 ")
        span = (f"{min(lost)} of {buggy.products} in every run" if min(lost) == max(lost)
                else f"{min(lost)}-{max(lost)} of {buggy.products} (median {statistics.median(lost):g})")
        assert f"records lost {span}" in words


def test_a_release_with_fewer_spread_kills_says_why_wherever_its_frequencies_are_printed(measured):
    case, (buggy, _) = measured
    line = release_frequencies(buggy.to_json())
    assert "aimed runs" in line and "spread-kill runs" in line and case.spread_note in line
    data = {"cases": {case.name: {"title": case.title, "framework": case.framework, "upstream": list(case.upstream),
                                  "status": case.status, "runtime": case.runtime, "args": list(case.args),
                                  "readme": "README.md", "releases": [o.to_json() for o in measured[1]]}}}
    page = analyses_page(data, results=os.path.join(case.folder, "results", "cases.json"))
    block = measured_block(data["cases"][case.name], **_readme_tables(data)[case.name])
    for text in (page, block):
        assert line in text or (frequency_words(buggy.frequencies["aimed"], "aimed", buggy.products) in text
                                and case.spread_note in text)


def test_a_run_that_failed_to_run_is_counted_as_such_not_as_clean(measured):
    _, (buggy, _) = measured
    failed = {**buggy.runs[0], "validity": "error", "flagged": False}
    summary = aggregate([failed, *buggy.runs[1:2]], buggy.expect)
    assert summary["errors"] == 1 and summary["runs"] == 2 and summary["as_expected"] == 1
    assert "1 did not run" in frequency_words(summary, "aimed")


def test_the_aimed_runs_have_the_cases_args_and_the_spread_runs_lose_the_schedule(tmp_path):
    case = _case(str(tmp_path))
    runs = planned_runs(case, case.releases[0], str(tmp_path), repeat=3)
    assert [(r.kind, r.index) for r in runs] == [("aimed", 1), ("aimed", 2), ("aimed", 3),
                                                 ("spread", 1), ("spread", 2), ("spread", 3)]
    spread = runs[3].words  # killtest measures the kills and the time limit
    assert not {"--schedule", "--kills", "--time-limit"} & set(spread) and spread.count("--runs") == 1
    assert "--time-limit" in runs[0].words
    assert without(("--schedule=r5", "--runs", "2", "--pace", "0"), ("--schedule", "--runs")) == ["--pace", "0"]
    assert planned_runs(_case(str(tmp_path), spread_kills=0, spread_note="locks"), case.releases[0],
                        str(tmp_path), 2)[-1].kind == "aimed"


def test_a_cases_own_repeat_caps_the_commands():
    assert repeat_of(_case("/x"), None) == 5 and repeat_of(_case("/x"), 2) == 2
    assert repeat_of(_case("/x", repeat=3), None) == 3 and repeat_of(_case("/x", repeat=3), 1) == 1


@pytest.mark.parametrize(("lines", "said"), [
    ('repeat = 0', "case.repeat: a whole number of at least 1"),
    ('spread_kills = 1', "case.spread_note: say why"),
    ('expect_share = 1.5', "case.expect_share: a share of the aimed runs"),
])
def test_a_bad_repeat_or_spread_key_is_one_line_naming_it(tmp_path, lines, said):
    folder = tmp_path / "zoo-case"
    folder.mkdir()
    (folder / "design.toml").write_text("")
    (folder / "case.toml").write_text(
        f'[case]\ntitle = "t"\nframework = "f"\nupstream = ["https://x"]\nstatus = "open"\nruntime = "python"\n'
        f'{lines}\n[[release]]\nversion = "1.0"\npackages = ["f==1.0"]\nexpect = ["lost"]\n')
    with pytest.raises(KilltestError, match=said) as raised:
        load_case(str(folder))
    assert "\n" not in str(raised.value)
