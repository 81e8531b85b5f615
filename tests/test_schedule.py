import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from killtest.harness.errors import KilltestError
from killtest.harness.faults.points.line import AtLine
from killtest.harness.faults.points.redeploy import Redeploy
from killtest.harness.faults.points.request import AtRequest
from killtest.harness.faults.points.timed import AfterDelay
from killtest.harness.faults.schedule import (
    parse_schedule,
    redeploy_schedule,
    request_schedule,
    run_seeds,
    timed_schedule,
)


def delays(schedule):
    return [p.delay_s for p in schedule.points]


def test_default_schedule_is_ten_kills_between_a_fifth_of_a_second_and_one_second():
    schedule = timed_schedule(seed=1)
    assert schedule.kills == 10
    assert all(0.2 <= d <= 1.0 for d in delays(schedule))


@given(seed=st.integers(), kills=st.integers(0, 50),
       low=st.floats(0.01, 5), span=st.floats(0, 5))
def test_same_seed_gives_the_same_schedule_within_its_bounds(seed, kills, low, span):
    first = timed_schedule(seed, kills, low, low + span)
    assert first == timed_schedule(seed, kills, low, low + span)
    assert first.kills == kills
    assert all(round(low, 4) <= d <= round(low + span, 4) for d in delays(first))


@given(seed=st.integers(), kills=st.integers(0, 30), low=st.integers(1, 500), span=st.integers(0, 500))
def test_request_count_schedules_are_seeded_and_within_their_bounds(seed, kills, low, span):
    first = request_schedule(seed, kills, low, low + span)
    assert first == request_schedule(seed, kills, low, low + span) and first.kills == kills
    assert all(isinstance(p, AtRequest) and low <= p.index <= low + span and not p.after_response
               for p in first.points)
    assert parse_schedule(first.spec).points == first.points  # replayable from its text


def test_redeploy_schedules_are_seeded_and_carry_their_grace():
    first = redeploy_schedule(4, 10, 1.0, 2.0, 5.0)
    assert first == redeploy_schedule(4, 10, 1.0, 2.0, 5.0) != redeploy_schedule(5, 10, 1.0, 2.0, 5.0)
    assert all(isinstance(p, Redeploy) and 1.0 <= p.delay_s <= 2.0 and p.grace_s == 5.0 for p in first.points)
    with pytest.raises(KilltestError):
        redeploy_schedule(4, 10, 2.0, 1.0, 5.0)
    with pytest.raises(KilltestError):
        request_schedule(4, 10, 0, 5)


def test_different_seeds_give_different_schedules():
    assert delays(timed_schedule(1)) != delays(timed_schedule(2))


def test_run_r_uses_base_seed_plus_r_minus_one_so_one_run_replays_alone():
    assert run_seeds(10, 3) == [10, 11, 12]
    assert timed_schedule(run_seeds(10, 3)[2]) == timed_schedule(12)


@pytest.mark.parametrize("kills, low, high", [(-1, 0.2, 1.0), (10, 0, 1.0), (10, 1.0, 0.5)])
def test_impossible_schedules_are_refused(kills, low, high):
    with pytest.raises(KilltestError):
        timed_schedule(1, kills, low, high)


def test_a_schedule_spec_round_trips_through_its_text():
    schedule = parse_schedule("r5, r6+, l:scrapers/idempotent.py:88:2,t0.25,d0.5:0.1,t0.3@2,d0.2:0@1")
    assert schedule.points == (AtRequest(5), AtRequest(6, after_response=True),
                               AtLine("scrapers/idempotent.py", 88, 2), AfterDelay(0.25), Redeploy(0.5, 0.1),
                               AfterDelay(0.3, worker=2), Redeploy(0.2, 0.0, worker=1))
    assert parse_schedule(schedule.spec) == schedule
    assert parse_schedule("").points == ()


@pytest.mark.parametrize("spec", ["q3", "r0", "r+", "t-1", "tfast", "l:file.py:10", "l::10:1", "l:f.py:0:1",
                                  "d0.5", "d0:0.1", "d0.5:-1", "r5@1", "t0.3@0", "t0.3@x"])
def test_a_bad_kill_point_is_refused_with_the_forms_it_takes(spec):
    forms = ("t<seconds>, f<seconds after the first request>[:<seconds to wait for it>], r<request number>[+],"
             " w<store write number>[:c<store connection number> | :<file under the work dir> | :redis],"
             " aw<store write number>[:c<store connection number> | :<file under the work dir> | :redis],"
             " d<seconds>:<grace>, p<seconds>:<paused seconds>, s<seconds>, x<seconds>, xr<request number>[+],"
             " xw<store write number>[:<file under the work dir>], xaw<store write number>[:<file under the work dir>]"
             " or")
    with pytest.raises(KilltestError, match=re.escape(forms)):
        parse_schedule(spec)
