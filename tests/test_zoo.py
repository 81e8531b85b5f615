"""The bug zoo: killtest flags each classic mistake with its own finding, and the correct design with none."""

import pytest

from killtest.harness.campaigns.zoo_runs import run_zoo
from killtest.harness.check.findings import FINDINGS
from killtest.harness.faults.zoo_scenarios import zoo_entries

ENTRIES = zoo_entries()


def test_the_zoo_holds_every_classic_mistake_and_eight_kinds_of_finding():
    expected = {entry.expect for entry in ENTRIES}
    assert len(ENTRIES) >= 9 and len(expected) >= 8
    assert expected <= set(FINDINGS)


# A pause past the lease races two workers against the clock: those scenarios run in make test's serial step
# (a loaded machine once made the fenced control fetch a page twice in one start).
@pytest.mark.slow
@pytest.mark.parametrize("entry", [pytest.param(entry, marks=[pytest.mark.serial] if entry.scenario.workers > 1 else [])
                                   for entry in ENTRIES], ids=[entry.design.name for entry in ENTRIES])
def test_killtest_flags_the_mistake_and_passes_the_correct_design_on_the_same_scenario(entry, tmp_path):
    [outcome] = run_zoo([entry], work_dir=str(tmp_path))
    assert outcome.flagged, f"{entry.design.name}: expected {entry.expect}, found {outcome.findings}: {outcome.replay}"
    assert outcome.control_clean, \
        f"the correct design failed {entry.design.name}'s scenario: {outcome.control_problems}"
    assert list(tmp_path.iterdir()) == []
