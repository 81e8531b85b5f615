"""What a design promises is explicit and strict by default; a spec waives a promise by name.

The README's example is the spec the end-to-end test runs (tests/test_cli.py), and what the README
says it is held to is what the checker holds it to.
"""

import os
import re

import pytest

from killtest.harness.check.checker import check_run
from killtest.harness.check.findings import Finding
from killtest.harness.design.registry import built_in_designs
from killtest.harness.design.specfile import load_spec
from killtest.harness.promises import IDEMPOTENCE, WAIVABLE, Promise
from tests.test_checker import CATALOG, KILLED_TWICE, history, truth

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "node-resume", "design.toml")
STORE = '[store]\nkind = "sqlite"\npath = "{work_dir}/s.sqlite"\nrecords = "SELECT sku, price FROM p"\n'


def spec(tmp_path, design_lines: str):
    path = tmp_path / "design.toml"
    path.write_text(f'[design]\nname = "mine"\nmodule = "a"\n{design_lines}' + STORE)
    return load_spec(str(path))


def duplicated_run(design):
    """Every product stored, the first one twice."""
    h = history(KILLED_TWICE, extra_requests=["/product/2"], reports_leases=True)
    end = h.first("run_finished")["t"]
    for key, value in [*truth(), truth()[0]]:
        h.add("store_record", end, key=key, fields={"price": value}, stamped=False)
    return check_run(design, 1, h.sorted(), CATALOG)


def test_a_spec_that_says_nothing_is_held_to_every_promise(tmp_path):
    design = spec(tmp_path, "")
    assert design.does_not_promise == frozenset() and design.claims_idempotence
    v = duplicated_run(design)
    assert v.findings == ["extra_rows"] and not v.valid
    assert v.problems == ["7 rows for 6 products (expected exactly one each) (broke no_duplicates)"]


def test_a_waived_promise_is_not_reported_and_the_others_still_are(tmp_path):
    design = spec(tmp_path, 'does_not_promise = ["no_duplicates"]\n')
    assert design.does_not_promise == {Promise.NO_DUPLICATES} and not design.claims_idempotence
    assert duplicated_run(design).valid
    h = history(KILLED_TWICE)
    end = h.first("run_finished")["t"]
    for key, value in truth()[1:]:  # one product lost
        h.add("store_record", end, key=key, fields={"price": value}, stamped=False)
    v = check_run(design, 1, h.sorted(), CATALOG)
    # fetched, then lost: a hole as well (harness/check/holes.py)
    assert v.findings == ["lost", "hole"] and v.problems[0].endswith("(broke no_lost_records)")


def test_a_hole_is_counted_in_words_that_agree_with_its_number(tmp_path):
    design = spec(tmp_path, "")
    words = []
    for lost in (1, 2):
        h = history(KILLED_TWICE)
        end = h.first("run_finished")["t"]
        for key, value in truth()[lost:]:
            h.add("store_record", end, key=key, fields={"price": value}, stamped=False)
        words.append(check_run(design, 1, h.sorted(), CATALOG).problems[1])
    assert words[0].startswith("1 lost record is a hole (") and "): its page was fetched" in words[0], words[0]
    assert words[1].startswith("2 lost records are holes (") and "): their page was fetched" in words[1], words[1]


def test_an_older_spec_keeps_its_meaning(tmp_path):
    assert spec(tmp_path, "claims_idempotence = false\n").does_not_promise == IDEMPOTENCE
    assert spec(tmp_path, "claims_idempotence = true\n").does_not_promise == frozenset()


def test_a_control_promises_nothing_but_must_show_duplicates():
    naive = built_in_designs()["naive"]
    assert naive.control and naive.does_not_promise == WAIVABLE
    assert duplicated_run(naive).valid
    clean = history(KILLED_TWICE)
    end = clean.first("run_finished")["t"]
    for key, value in truth():
        clean.add("store_record", end, key=key, fields={"price": value}, stamped=False)
    assert check_run(naive, 1, clean.sorted(), CATALOG).findings == ["control_without_duplicates"]


@pytest.mark.parametrize("name", ["idempotent", "idempotent-pg", "queue-bullmq", "idempotent-effects"])
def test_the_correct_built_in_designs_are_held_to_every_promise(name):
    assert built_in_designs()[name].does_not_promise == frozenset()


def test_every_finding_names_a_promise_and_the_run_itself_is_not_waivable():
    for finding in Finding:
        assert isinstance(finding.promise, Promise)
    assert Promise.FINISHES not in WAIVABLE and Promise.PROVES_SOMETHING not in WAIVABLE


def test_the_readme_shows_the_example_spec_and_the_checker_holds_it_to_what_the_readme_says():
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    block = re.search(r"```toml\n(\[design\]\nname = \"node-resume\".*?)```", readme, re.S)
    assert block is not None
    assert block.group(1) == open(EXAMPLE, encoding="utf-8").read().split("\n", 1)[1]
    design = load_spec(EXAMPLE)
    assert design.does_not_promise == {Promise.BOUNDED_REQUESTS}
    assert "waives\n`bounded_requests` only" in readme or "`bounded_requests` only" in readme
    assert duplicated_run(design).findings == ["extra_rows"]  # held to no duplicates, as the README says
    many_requests = history(KILLED_TWICE, extra_requests=["/list/0"] * 20)
    end = many_requests.first("run_finished")["t"]
    for key, value in truth():
        many_requests.add("store_record", end, key=key, fields={"price": value}, stamped=False)
    assert check_run(design, 1, many_requests.sorted(), CATALOG).valid  # not to the fewest requests
