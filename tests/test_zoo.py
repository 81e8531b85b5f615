"""The bug zoo: killtest flags each classic mistake with its own finding, and the correct design with none."""

import os

import pytest

from killtest.harness.campaigns.zoo_runs import run_zoo
from killtest.harness.check.findings import FINDINGS
from killtest.harness.faults import power_loss
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.faults.zoo_scenarios import zoo_entries

ENTRIES = zoo_entries()
# A scenario that cuts the power needs the FUSE file system: skipped where it cannot run, as the power-cut tests
# are, unless KILLTEST_REQUIRE_SERVERS=1 (CI), where the refusal is the failure.
NO_POWER_LOSS = None if os.environ.get("KILLTEST_REQUIRE_SERVERS") == "1" else power_loss.unavailable_reason()


def cuts_the_power(entry) -> bool:
    return any(getattr(point, "needs_power_loss_mount", False)
               for schedule in (entry.scenario.schedule, entry.scenario.control_schedule)
               for point in parse_schedule(schedule).points)


def test_the_zoo_holds_every_classic_mistake_and_eight_kinds_of_finding():
    expected = {entry.expect for entry in ENTRIES}
    assert len(ENTRIES) >= 9 and len(expected) >= 8
    assert expected <= set(FINDINGS)


# A pause past the lease races two workers against the clock: those scenarios run in make test's serial step
# (a loaded machine once made the fenced control fetch a page twice in one start). So do two single-worker ones
# that race a short lock: exits-with-leases is flagged only if the restart finishes while the killed start's 2 s
# lease still holds, and queue-set-only's control is BullMQ, whose 2 s job lock a starved worker loses.
RACE_A_LOCK = {"zoo-exits-with-leases", "zoo-queue-set-only"}


@pytest.mark.slow
@pytest.mark.parametrize("entry", [pytest.param(entry, marks=[pytest.mark.serial]
                                                if entry.scenario.workers > 1 or entry.design.name in RACE_A_LOCK
                                                else [])
                                   for entry in ENTRIES], ids=[entry.design.name for entry in ENTRIES])
def test_killtest_flags_the_mistake_and_passes_the_correct_design_on_the_same_scenario(entry, tmp_path):
    if NO_POWER_LOSS and cuts_the_power(entry):
        pytest.skip(f"{entry.design.name} cuts the power: {NO_POWER_LOSS}")
    [outcome] = run_zoo([entry], work_dir=str(tmp_path))
    assert outcome.flagged, f"{entry.design.name}: expected {entry.expect}, found {outcome.findings}: {outcome.replay}"
    assert outcome.control_clean, \
        f"the correct design failed {entry.design.name}'s scenario: {outcome.control_problems}"
    assert list(tmp_path.iterdir()) == []
