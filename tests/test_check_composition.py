"""The checker is a composition of named checks: each says valid, invalid or unknown, and they merge.

Jepsen's checker.clj is the model: invalid beats unknown beats valid, and a check that crashes makes
the verdict unknown (check-safe), never valid.
"""

from types import SimpleNamespace

import pytest

from killtest.harness.check import named_checks
from killtest.harness.check.categories import sort_records
from killtest.harness.check.checker import check_run
from killtest.harness.check.findings import Finding
from killtest.harness.check.named_checks import CHECKS, Evidence, compose
from killtest.harness.check.run_figures import count_figures
from killtest.harness.check.verdict import CheckResult, Validity
from tests.test_checker import CATALOG, IDEMPOTENT, KILLED_TWICE, check, history, truth

VALID, INVALID, UNKNOWN = Validity.VALID, Validity.INVALID, Validity.UNKNOWN


@pytest.mark.parametrize("validities, merged", [
    ([], VALID),
    ([VALID, VALID], VALID),
    ([VALID, UNKNOWN], UNKNOWN),
    ([UNKNOWN, VALID], UNKNOWN),
    ([VALID, INVALID], INVALID),
    ([UNKNOWN, INVALID, VALID], INVALID),
    ([INVALID, UNKNOWN], INVALID),
])
def test_invalid_beats_unknown_beats_valid(validities, merged):
    assert Validity.merge(validities) is merged


def test_validity_values_are_the_words_result_files_hold():
    assert [v.value for v in Validity] == ["valid", "invalid", "unknown"]


def evidence(design=IDEMPOTENT, records=None):
    """What the checks read of an idempotent run killed twice whose store held `records` (all correct by default)."""
    h = history(KILLED_TWICE, extra_requests=["/product/2"], reports_leases=True)
    end = h.first("run_finished")["t"]
    for key, value in truth() if records is None else records:
        h.add("store_record", end, key=key, fields={"price": value}, stamped=False)
    h = h.sorted()
    sets = sort_records(h, CATALOG.truth())
    return Evidence(design, count_figures(design.name, 1, h, [CATALOG], sets), h, CATALOG, sets)


def raises(_):
    raise ZeroDivisionError("division by zero")


def test_a_check_that_raises_makes_the_verdict_unknown_not_valid():
    composed = compose(evidence(), (("fine", lambda e: CheckResult()), ("broken", raises)))
    assert composed.validity is Validity.UNKNOWN
    assert composed.findings == [(Finding.CHECK_FAILED, "check broken failed: ZeroDivisionError: division by zero")]
    assert composed.results["fine"].validity is Validity.VALID


def test_a_check_that_raises_does_not_hide_a_broken_promise_found_by_another():
    lost = lambda e: CheckResult(Validity.INVALID, {}, [(Finding.LOST, "lost 1 of 6 records")])  # noqa: E731
    composed = compose(evidence(), (("broken", raises), ("records", lost)))
    assert composed.validity is Validity.INVALID
    assert [f for f, _ in composed.findings] == [Finding.CHECK_FAILED, Finding.LOST]


def test_a_run_whose_check_crashed_is_reported_unknown_with_its_error(monkeypatch):
    monkeypatch.setattr(named_checks, "CHECKS", CHECKS + (("boom", raises),))
    v = check(IDEMPOTENT, history(KILLED_TWICE, extra_requests=["/product/2"], reports_leases=True), truth())
    assert v.validity == "unknown" and not v.valid
    assert v.findings == ["check_failed"] and v.problems == ["check boom failed: ZeroDivisionError: division by zero"]
    assert v.checks["boom"] == "unknown" and v.checks["records"] == "valid"


def test_a_crashed_check_is_a_broken_point_for_explore_not_a_run_that_proved_nothing(monkeypatch):
    """Only 'no kill landed' excuses an unknown verdict; a check that could not judge is never a pass."""
    from killtest.harness.campaigns.exploration import broken_promises

    monkeypatch.setattr(named_checks, "CHECKS", CHECKS + (("boom", raises),))
    v = check(IDEMPOTENT, history(KILLED_TWICE, extra_requests=["/product/2"], reports_leases=True), truth())
    assert not v.proved_nothing
    assert broken_promises(v) == ["check boom failed: ZeroDivisionError: division by zero"]


def test_the_checks_run_in_a_fixed_order_so_problems_read_the_same_each_time():
    assert [name for name, _ in CHECKS] == ["liveness", "crash", "kills_landed", "records", "holes", "network",
                                            "duplicates", "requests", "drift", "leases", "zombie_writers", "control",
                                            "side_effects", "recording"]
    v = check(IDEMPOTENT, history(KILLED_TWICE, extra_requests=["/list/0"] * 3, outcome="timed_out"),
              truth()[1:] + truth()[1:3])
    assert v.findings == ["liveness", "extra_rows", "excess_requests", "fetched_twice_by_one_start"]
    assert list(v.checks) == [name for name, _ in CHECKS]


def test_every_named_check_answers_with_a_validity_and_findings_that_are_findings():
    e = evidence(records=truth()[1:] + truth()[1:3])
    for name, check_ in CHECKS:
        result = check_(e)
        assert isinstance(result.validity, Validity), name
        assert all(isinstance(f, Finding) and isinstance(m, str) for f, m in result.findings), name
        assert (result.validity is Validity.VALID) == (not result.findings), name


def test_the_checker_takes_any_object_with_the_design_traits_it_reads():
    traits = SimpleNamespace(name="mine", claims_idempotence=True, control=False, side_effects=False,
                             does_not_promise=frozenset())
    h = history(KILLED_TWICE, extra_requests=["/product/2"], reports_leases=True)
    end = h.first("run_finished")["t"]
    for key, value in truth():
        h.add("store_record", end, key=key, fields={"price": value}, stamped=False)
    v = check_run(traits, 1, h.sorted(), CATALOG)
    assert v.design == "mine" and v.validity == "valid" and v.valid
