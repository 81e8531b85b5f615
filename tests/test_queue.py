"""Firecrawl's queue design on a private Redis with BullMQ: recovery after kills and redeploys, and the incident."""

import os

import psutil
import pytest

from killtest.fixture_site.server import SiteServer
from killtest.harness.check.checker import check_run
from killtest.harness.design.registry import design_named
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.running.runner import RunSettings, run_kill_test
from killtest.harness.servers.common import REQUIRE_SERVERS_VARIABLE, ServerUnavailable, servers_required
from killtest.harness.servers.private_redis import PrivateRedis


def start_redis():
    try:
        return PrivateRedis().start()
    except ServerUnavailable as missing:
        if servers_required():
            pytest.fail(f"{missing} ({REQUIRE_SERVERS_VARIABLE} is set, so a missing server fails)")
        pytest.skip(str(missing))


@pytest.fixture(scope="module")
def redis_server():
    server = start_redis()
    yield server
    server.stop()


def kill_test(name, schedule, site, redis_server, tmp_path, time_limit_s=30.0):
    design = design_named(name)
    history = run_kill_test(design, parse_schedule(schedule), site, str(tmp_path),
                            RunSettings(time_limit_s=time_limit_s), dsn=redis_server.fresh_database())
    return history, check_run(design, 1, history, site.catalog)


def test_the_private_redis_listens_on_loopback_only_and_leaves_nothing_behind():
    server = start_redis()
    directory, pid = server._dir, server.pid
    listening = {c.laddr.ip for c in psutil.Process(pid).net_connections(kind="inet") if c.status == "LISTEN"}
    assert listening == {"127.0.0.1"}
    server.stop()
    assert not os.path.exists(directory) and not psutil.pid_exists(pid)


@pytest.fixture
def paced_site(small_catalog):
    """10 requests a second: the 44-request crawl (4.4 s) outlasts every timed point below on any machine. The
    redeploy comes 2.5 s after its start: importing the BullMQ port alone takes 0.4-0.6 s here and more than
    1 s on a machine slowed to a third of its speed, where a redeploy at 1 s (25 requests a second, as it was)
    landed before the first request, which is no kill (CI saw 2 of 3, twice). At 2.5 s a start that began at
    0.6 s has made about 19 of its 35 requests, and the third start still has its 8th to make."""
    with SiteServer(small_catalog, pace_rps=10) as server:
        yield server


@pytest.mark.slow
@pytest.mark.serial  # timing-sensitive: failed under load (make test runs it after the rest, beside one other at most)
def test_with_the_fixed_lock_settings_the_queue_recovers_from_kills_and_a_short_redeploy(paced_site, redis_server,
                                                                                       tmp_path):
    site = paced_site
    history, verdict = kill_test("queue-bullmq", "r9,d2.5:0.01,r8", site, redis_server, tmp_path)
    assert verdict.kills == 3 and {k["signal"] for k in history.of_type("kill")} == {"SIGKILL", "SIGTERM"}
    assert verdict.rows == verdict.correct_records == len(site.catalog.products), verdict.problems
    assert verdict.requests <= site.catalog.full_crawl_requests + verdict.kills
    assert verdict.valid, verdict.problems


@pytest.mark.serial  # timing-sensitive: failed under load (make test runs it after the rest, beside one other at most)
def test_a_lock_far_longer_than_the_window_stalls_the_crawl_after_a_kill(site, redis_server, tmp_path):
    # /list/1 held by the killed worker: its job stays locked for the 120 s lock, and nothing else is left.
    history, verdict = kill_test("queue-bullmq-2h", "r12", site, redis_server, tmp_path, time_limit_s=4.0)
    assert verdict.outcome == "timed_out" and verdict.findings[0] == "liveness"
    # The held page was never fetched again: its stall is the whole rest of the run, from the kill to the 4 s time
    # limit (a fixed "> 3.0" assumed the kill came before 1 s, and a CI run killed at 1.001 s: 2.999)
    kill, end = history.first("kill")["t"], history.first("run_finished")["t"]
    assert verdict.longest_claim_stall_s == round(end - kill, 3) and end >= 4.0
    assert "still held" in verdict.problems[0]


@pytest.mark.slow
@pytest.mark.serial  # BullMQ's 2 s lock and a measured stall: like the two beside it
def test_the_same_kill_with_the_fixed_lock_recovers(site, redis_server, tmp_path):
    history, verdict = kill_test("queue-bullmq", "r12", site, redis_server, tmp_path)
    assert verdict.valid, verdict.problems
    assert 1.5 < verdict.longest_claim_stall_s < 10  # the 2 s lock ran out, then a stalled-job check moved it


@pytest.mark.fault("s")
def test_the_queue_survives_a_crash_and_restart_of_redis_itself_and_a_rolling_redeploy(paced_site, redis_server,
                                                                                     tmp_path):
    design = design_named("queue-bullmq")
    history = run_kill_test(design, parse_schedule("s0.4,d0.3:0.05@1,d0.1:0.05@2"), paced_site, str(tmp_path),
                            RunSettings(time_limit_s=30, workers=2), dsn=redis_server.fresh_database(),
                            restart_store=redis_server.crash_and_restart)
    verdict = check_run(design, 1, history, paced_site.catalog)
    assert sum("server_restart_s" in k for k in history.of_type("kill")) == 1
    assert [k.get("worker") for k in history.of_type("kill")] == [None, 1, 2]
    assert verdict.rows == verdict.correct_records == len(paced_site.catalog.products), verdict.problems
    assert verdict.valid, verdict.problems
