"""One run set behind every case figure: the READMEs' measured and explored tables, every report.md's figures and
README.md's headline table are the ones in results/cases.json (and explore.json), and every role there and in
a case's upstream.toml is the one its case.toml gives. A frequency ("flagged in 5 of 5 aimed runs", "records
lost 118-169 of 200 (median 137)") written anywhere outside the generated blocks must be one of a release's
runs' in cases.json too. Each check is also shown failing on a figure changed."""

from __future__ import annotations

import json
import os
import re

import pytest

from killtest.harness.design.case_spec import FLAGGED_ROLES, load_cases
from killtest.harness.design.registry import PROJECT_ROOT
from killtest.harness.errors import KilltestError
from killtest.harness.report import case_table
from killtest.harness.report.case_readme_blocks import KINDS, block_in, readme_path, wanted_blocks
from killtest.harness.report.case_report_notes import FRAMEWORK_ONLY, FRAMEWORK_ONLY_END
from killtest.harness.report.case_report_page import REPORT_RUN, REPORT_RUN_END, report_markdown
from killtest.harness.report.case_words import case_words, release_name

RESULTS = os.path.join(PROJECT_ROOT, "results")
DATA = case_table.read_results(os.path.join(RESULTS, "cases.json"))
CASES = sorted((DATA or {}).get("cases", {}))
LOST = re.compile(r"\b(\d+) of (\d+) (?:records |products )?lost\b|\blost (\d+) of (\d+)\b")
ROWS = re.compile(r"\b(\d+) rows\b")
FLAGGED_IN = re.compile(r"\bflagged in (\d+) of (\d+) (aimed|spread-kill) runs\b")
LOST_RANGE = re.compile(r"\blost (\d+)-(\d+) of (\d+) \(median ([\d.]+)\)")


def _text(path: str) -> str:
    with open(path, encoding="utf-8") as src:
        return src.read()


def _blocks_wrong(name: str, text: str) -> list[str]:
    """The README's generated blocks that are missing or not what the generator makes from the results now."""
    case = DATA["cases"][name]
    wanted = wanted_blocks(case, os.path.join(RESULTS, "cases", name), case_table._readme_tables(DATA)[name])
    return [kind for kind, body in wanted.items() if block_in(text, kind) != body]


def _outside_blocks(text: str) -> str:
    for kind in KINDS:
        text = re.sub(rf"<!-- generated: {kind} -->.*?<!-- end generated: {kind} -->", "", text, flags=re.S)
    return text


def _lost_figures(text: str) -> set[tuple[int, int]]:
    return {(int(m[0] or m[2]), int(m[1] or m[3])) for m in LOST.findall(text)}


def _measured(name: str) -> set[tuple[int, int]]:
    """The losses results/ holds for the case: its releases' in cases.json, and its explorations' (explore.md,
    generated from explore.json), which a README may quote beside the replay line that reproduces them."""
    explored = os.path.join(RESULTS, "cases", name, "explore.md")
    releases = DATA["cases"][name]["releases"]
    return ({(r["missing"], r["products"]) for r in releases if "missing" in r}
            | {(run["lost"], r["products"]) for r in releases for run in r.get("runs", [])}
            | (_lost_figures(_text(explored)) if os.path.exists(explored) else set()))


def _frequencies_in(text: str) -> set[tuple]:
    return ({("flagged", int(k), int(n), kind) for k, n, kind in FLAGGED_IN.findall(text)}
            | {("lost", int(a), int(b), int(p), float(m)) for a, b, p, m in LOST_RANGE.findall(text)})


def _measured_frequencies(name: str) -> set[tuple]:
    """Every frequency the case's releases have in cases.json, as the two patterns above read them."""
    found: set[tuple] = set()
    for r in DATA["cases"][name]["releases"]:
        for kind, summary in (r.get("frequencies") or {}).items():
            if summary:
                word = "aimed" if kind == "aimed" else "spread-kill"
                found |= {("flagged", summary["flagged"], summary["runs"], word),
                          ("lost", summary["lost"]["min"], summary["lost"]["max"], r["products"],
                           float(summary["lost"]["median"]))}
    return found


@pytest.mark.parametrize("name", CASES)
def test_each_case_readme_holds_its_tables_as_generated_from_the_results(name):
    assert _blocks_wrong(name, _text(readme_path(DATA["cases"][name]))) == []


@pytest.mark.parametrize("name", CASES)
def test_no_case_readme_states_a_loss_that_is_not_in_the_run_set(name):
    prose = _outside_blocks(_text(readme_path(DATA["cases"][name])))
    assert _lost_figures(prose) - _measured(name) == set()
    assert _frequencies_in(prose) - _measured_frequencies(name) == set()


def test_a_frequency_not_in_the_run_set_is_caught():
    name = next(n for n in CASES if any(r.get("frequencies") for r in DATA["cases"][n]["releases"]))
    release = next(r for r in DATA["cases"][name]["releases"] if r.get("frequencies"))
    aimed = release["frequencies"]["aimed"]
    said = f"flagged in {aimed['flagged']} of {aimed['runs']} aimed runs"
    assert _frequencies_in(said) <= _measured_frequencies(name)
    wrong = f"flagged in {aimed['runs'] + 1} of {aimed['runs'] + 1} aimed runs, records lost 1-999 of 1000 (median 7)"
    assert len(_frequencies_in(wrong) - _measured_frequencies(name)) == 2


def test_a_changed_figure_in_a_readme_block_is_caught():
    name = "apify-sdk-python-1097"
    text = _text(readme_path(DATA["cases"][name]))
    release = DATA["cases"][name]["releases"][0]
    changed = text.replace(f"{release['missing']} of {release['products']} lost", "169 of 200 lost", 1)
    assert changed != text and _blocks_wrong(name, changed) == ["measured"]
    assert _lost_figures(_outside_blocks(changed + "\nre-run it lost 181 of 200.")) - _measured(name) == {(181, 200)}


def _reports() -> list[tuple[str, str, str]]:
    found = []
    for name in CASES:
        folder = os.path.join(RESULTS, "cases", name)
        for key in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if os.path.exists(os.path.join(folder, key, "report.json")):
                found.append((name, key, os.path.join(folder, key)))
    return found


def _record(name: str, key: str) -> dict | None:
    return next((r for r in DATA["cases"][name]["releases"] if os.path.basename(r.get("out", "")) == key), None)


def _report_wrong(text: str, record: dict) -> list[str]:
    """Figures of report.md, outside its own run's block, that are not the run set of record's."""
    outside = re.sub(re.escape(REPORT_RUN) + r".*?" + re.escape(REPORT_RUN_END), "", text, flags=re.S)
    outside = re.sub(re.escape(FRAMEWORK_ONLY) + r".*?" + re.escape(FRAMEWORK_ONLY_END), "", outside, flags=re.S)
    wrong = [f"{a} of {b} lost" for a, b in _lost_figures(outside) if (a, b) != (record["missing"], record["products"])]
    return wrong + [f"{n} rows" for n in ROWS.findall(outside) if int(n) != record["rows"]]


@pytest.mark.parametrize(("name", "key", "folder"), _reports(), ids=lambda v: os.path.basename(str(v)))
def test_each_report_states_the_run_set_of_records_figures(name, key, folder):
    record = _record(name, key)
    assert record is not None, f"{name} {key} has a report but no row in results/cases.json"
    text = _text(os.path.join(folder, "report.md"))
    assert _report_wrong(text, record) == []
    facts = json.loads(_text(os.path.join(folder, "report.json")))
    assert text == report_markdown(facts, record)  # as generated: nothing typed into it by hand


def test_a_changed_figure_in_a_report_is_caught():
    name, key, folder = _reports()[0]
    record = _record(name, key)
    text = _text(os.path.join(folder, "report.md"))
    title = text.splitlines()[0]
    assert _report_wrong(title.replace(f"{record['missing']} of", f"{record['missing'] + 19} of"), record) != []
    assert _report_wrong(text, record) == []


def _given() -> dict[tuple[str, str], str]:
    return {(c.name, release_name(r.version, r.label)): r.role for c in load_cases() for r in c.releases}


def test_every_role_in_cases_json_is_its_case_tomls():
    given = _given()
    measured = {(name, release_name(r["version"], r.get("label", ""))): r.get("role")
                for name in CASES for r in DATA["cases"][name]["releases"]}
    assert {k: v for k, v in measured.items() if given.get(k, v) != v} == {}


def test_every_flagged_or_fixed_release_quotes_upstream_under_its_own_role():
    given = _given()
    quoted = {(name, release): words["role"] for name in {n for n, _ in given}
              for words in case_words(name)["words"] for release in words["releases"]}
    assert {k: v for k, v in quoted.items() if given.get(k) != v} == {}  # a quote under another role
    needs = {k for k, role in given.items() if role in (*FLAGGED_ROLES, "fixed")}
    assert needs - set(quoted) == set()
    for name in {n for n, _ in given}:
        for words in case_words(name)["words"]:
            assert words["source"].startswith("https://") and words["quote"] and words["checked"]
        for row in case_words(name)["unreported"]:
            assert row["queries"] and row["nearest"] and row["searched"]


def test_the_headline_tables_losses_are_in_the_run_set():
    readme = _text(os.path.join(PROJECT_ROOT, "README.md"))
    section = readme.split("## Does it find real bugs?")[1].split("\n## ")[0]
    every = {pair for name in CASES for pair in _measured(name)}
    assert _lost_figures(section) and _lost_figures(section) - every == set()
    assert _frequencies_in(section) - {f for name in CASES for f in _measured_frequencies(name)} == set()


def test_an_unknown_key_in_upstream_toml_is_a_one_line_error(tmp_path):
    (tmp_path / "some-case").mkdir()
    (tmp_path / "some-case" / "upstream.toml").write_text('[[words]]\nreleases = ["1.0"]\nqoute = "typo"\n')
    with pytest.raises(KilltestError, match=r"^some-case/upstream.toml: unknown key words.qoute; \[words\] may hold"):
        case_words("some-case", root=str(tmp_path))
    assert case_words("no-such-case", root=str(tmp_path))["words"] == []
