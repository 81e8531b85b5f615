"""`f` kill points count from the start's own first request, so a kill lands at work however slow the start-up.

A design whose every start sleeps 1.5 s before its first request is killed 0.2 s after that request
(`f0.2`), where a `t0.2` would land before any work. A start that makes no request within the point's wait,
in a crawl an earlier start had begun, is killed anyway, that wait plus the delay after its spawn, so the run
goes on. `killtest run` uses these
points for a user's design it measured (harness/running/pace.py), and its pin line gives them back.
"""

import signal

import pytest

from killtest.fixture_site.server import SiteServer
from killtest.harness import defaults
from killtest.harness.check.categories import sort_kills
from killtest.harness.check.checker import check_run
from killtest.harness.cli.plans_from_args import first_request_wait, kill_delay, kill_spread
from killtest.harness.design.specfile import load_spec
from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import parse_point
from killtest.harness.faults.points.first_request import AfterFirstRequest
from killtest.harness.faults.schedule import parse_schedule, timed_schedule
from killtest.harness.running.pace import paced
from killtest.harness.running.runner import RunSettings, run_kill_test
from tests.conftest import wrapped_idempotent_spec
from tests.test_runner import no_process_left

SLOW_START_S = 1.5  # each start of the design sleeps this long before its first request


@pytest.mark.parametrize("text, delay, wait, spec", [
    ("f0.4", 0.4, defaults.FIRST_REQUEST_WAIT_S, "f0.4"),
    ("f0.4:8", 0.4, 8.0, "f0.4:8"),
    (f"f1.25:{defaults.FIRST_REQUEST_WAIT_S:g}", 1.25, defaults.FIRST_REQUEST_WAIT_S, "f1.25"),
])
def test_an_f_point_reads_its_delay_and_its_wait_and_writes_them_back(text, delay, wait, spec):
    point = parse_point(text)
    assert point == AfterFirstRequest(delay, wait)
    assert point.spec == spec and parse_point(point.spec) == point


@pytest.mark.parametrize("text", ["f", "f0", "f-1", "fx", "f0.4:", "f0.4:0", "f0.4:8:9", "f0.4@2"])
def test_a_malformed_f_point_is_one_line_listing_every_form(text):
    with pytest.raises(KilltestError, match=r"f<seconds after the first request>\[:<seconds to wait for it>\]"):
        parse_point(text)


def test_a_seeded_f_schedule_draws_the_same_delays_as_the_timed_one():
    timed = timed_schedule(5, 10, 0.2, 1.0)
    after_first = timed_schedule(5, 10, 0.2, 1.0, first_request_wait_s=7.8)
    assert [p.delay_s for p in after_first.points] == [p.delay_s for p in timed.points]
    assert all(isinstance(p, AfterFirstRequest) and p.wait_first_s == 7.8 for p in after_first.points)
    assert parse_schedule(after_first.spec).points == after_first.points and after_first.spec.startswith("f")


def test_kill_delay_counts_from_the_spawn_unless_it_starts_with_f():
    assert (kill_delay("0.2,1.0"), first_request_wait("0.2,1.0")) == ((0.2, 1.0), None)
    assert (kill_delay("f0.2,1:7.8"), first_request_wait("f0.2,1:7.8")) == ((0.2, 1.0), 7.8)
    assert first_request_wait("f0.2,1") == defaults.FIRST_REQUEST_WAIT_S
    for bad in ("f0.2,1:0", "f0.2,1:x", "f0.2", "0.2"):
        with pytest.raises(KilltestError, match="--kill-delay takes LOW,HIGH"):
            first_request_wait(bad)


def test_a_measured_design_is_killed_after_each_first_request_and_its_pin_line_gives_the_schedule_back():
    measured = paced(2.6, 199.0, 10, None, None, ["crawlee-playwright"])
    # Spread over its whole work after the first request: from the article's 0.2 s to nine tenths of the work.
    assert measured.kill_delay_s == (0.2, round(defaults.KILL_WINDOW_SHARE * (199.0 - 2.6), 2)) and measured.spread
    assert measured.first_request_wait_s == round(2.6 * defaults.FIRST_REQUEST_WAIT_STARTUPS, 2)
    assert measured.first_request_wait_s > 2.6 * defaults.STARTUP_MARGIN  # past it, the start is waiting
    pinned = measured.pin.split()[1]
    assert pinned == f"f0.2~{measured.kill_delay_s[1]:g}:{measured.first_request_wait_s:g}" and kill_spread(pinned)
    schedule = timed_schedule(3, 10, *kill_delay(pinned), first_request_wait_s=first_request_wait(pinned), spread=True)
    assert schedule == timed_schedule(3, 10, *measured.kill_delay_s, first_request_wait_s=measured.first_request_wait_s,
                                      spread=True)
    # The user's own --kill-delay 3,5 keeps its meaning: seconds after the spawn.
    given = paced(2.6, 199.0, 10, (3.0, 5.0), None, ["x"])
    assert given.first_request_wait_s is None and given.pin.startswith("--kill-delay 3,5 ")


@pytest.fixture
def slow_start(tmp_path):
    spec = tmp_path / "design.toml"
    spec.write_text(wrapped_idempotent_spec("slow-start", f'sleep {SLOW_START_S}; exec "$0" "$@"'))
    return load_spec(str(spec))


def work_dir(tmp_path):
    (tmp_path / "run").mkdir()
    return str(tmp_path / "run")


def first_request_of(history, start):
    return next(r["t"] for r in history.of_type("request") if r["start"] == start)


@pytest.mark.fault("f")
def test_kills_after_the_first_request_land_at_work_however_slow_the_start_up(slow_start, small_catalog, tmp_path):
    # 25 requests a second: the 44-request crawl takes 1.76 s of answers at the least, more than the 0.4 s of
    # work the two kills allow, so on any machine each kill comes before the crawl finished.
    with SiteServer(small_catalog, pace_rps=25) as site:
        history = run_kill_test(slow_start, parse_schedule("f0.2,f0.2"), site, work_dir(tmp_path),
                                RunSettings(lease_s=0.5))
    kills = history.of_type("kill")
    assert [(k["point"], k["returncode"]) for k in kills] == [("f0.2", -signal.SIGKILL)] * 2
    assert [k.status for k in sort_kills(history)] == ["landed", "landed"]  # a t0.2 lands before work here
    for kill in kills:
        spawned = next(e["t"] for e in history.of_type("process_started") if e["start"] == kill["start"])
        assert first_request_of(history, kill["start"]) - spawned >= SLOW_START_S
        assert kill["t"] - first_request_of(history, kill["start"]) >= 0.2
    verdict = check_run(slow_start, 1, history, site.catalog)
    assert verdict.outcome == "completed" and verdict.valid, verdict.problems
    no_process_left(history)


def test_a_start_with_no_request_within_the_wait_is_killed_that_long_after_its_spawn_once_the_crawl_began(
        slow_start, small_catalog, tmp_path):
    with SiteServer(small_catalog, pace_rps=25) as site:
        history = run_kill_test(slow_start, parse_schedule("f0.2:0.5,f0.1:0.5"), site, work_dir(tmp_path),
                                RunSettings(lease_s=0.5))
    first, second = history.of_type("kill")
    # The first start outlasts its 0.5 s wait, but nobody had begun the crawl: it is still starting, not waiting,
    # so the point waits on for its first request, and its kill lands at work.
    assert first["t"] - first_request_of(history, 0) >= 0.2
    # The second start makes no request within its wait in a crawl the first one began: it is killed 0.5 + 0.1 s
    # after its spawn, before its first request, and the run goes on.
    spawned = next(e["t"] for e in history.of_type("process_started") if e["start"] == 1)
    assert second["returncode"] == -signal.SIGKILL and second["t"] - spawned >= 0.5 + 0.1
    assert not [r for r in history.of_type("request") if r["start"] == 1]
    # Past its point's wait in a crawl the first start had begun: waiting, so at work, though nothing was measured
    # (a replay line carries the f points, not the measured start-up).
    assert [(k.status, k.waiting) for k in sort_kills(history)] == [("landed", False), ("landed", True)]
    assert history.first("run_finished")["outcome"] == "completed"  # the next start finished the crawl
    no_process_left(history)
