"""A crawler in feapder 1.9.3's shape (tests/scraper_fixtures/feapder_style/): its queue in a private Redis the
spec declares ([servers] redis), its records in a JSON-lines file. Each run gets a Redis of its own, flushed;
the server stops with the campaign; and the crawler keeps every record through kills, a crash of its queue's
server included (it promises no_lost_records, not no_duplicates: a kill after a batch is saved and before its
requests leave Redis saves the batch again, the window after-points aim at)."""

import os

import psutil
import pytest
import redis

from killtest.harness.check.checker import check_run
from killtest.harness.design.specfile import load_spec
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.promises import Promise
from killtest.harness.running.orchestrator import run_phase, stage
from killtest.harness.running.runner import RunSettings
from killtest.harness.servers.common import REQUIRE_SERVERS_VARIABLE, ServerUnavailable, servers_required
from killtest.harness.servers.for_stores import StoreServers

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scraper_fixtures", "feapder_style")
DESIGN = os.path.join(FIXTURE, "design.toml")
# The same crawler holding no_duplicates, for a test that looks for its duplicate window.
EXACTLY_ONCE = os.path.join(FIXTURE, "design-exactly-once.toml")
# Far above a run of the small catalog (4 listing pages of 10; about 6 s unkilled, most of it feapder's
# 1 s flushes) on a machine at a third of this one's speed.
SETTINGS = RunSettings(time_limit_s=120)


def servers_for(design):
    try:
        return StoreServers([design])
    except ServerUnavailable as missing:  # pragma: no cover - CI has redis-server
        if servers_required():
            pytest.fail(f"{missing} ({REQUIRE_SERVERS_VARIABLE} is set, so a missing server fails)")
        pytest.skip(str(missing))


def test_the_spec_declares_redis_and_promises_no_loss_but_not_exactly_once():
    design, strict = load_spec(DESIGN), load_spec(EXACTLY_ONCE)
    assert design.servers == strict.servers == ("redis",) and design.store.kind == "jsonl"
    assert Promise.NO_LOST_RECORDS in design.promises and Promise.NO_DUPLICATES not in design.promises
    assert Promise.NO_DUPLICATES in strict.promises and strict.module == design.module == "shop_spider"


def test_each_run_gets_a_private_redis_of_its_own_emptied_and_the_server_stops_after():
    design = load_spec(DESIGN)
    with servers_for(design) as servers:
        (name, url), = servers.urls_for(design)
        assert name == "redis" and url.startswith("redis://127.0.0.1:")
        assert servers.dsn_for(design) == ""  # the store is a file: no database of its own
        server = servers._running["redis"]
        pid, directory = server.pid, server.directory
        listening = {c.laddr.ip for c in psutil.Process(pid).net_connections(kind="inet") if c.status == "LISTEN"}
        assert listening == {"127.0.0.1"}
        with redis.Redis.from_url(url) as client:
            client.zadd("shop:z_requests", {"left by the last run": 300})
            assert servers.urls_for(design) == ((name, url),)
            assert client.dbsize() == 0  # the next run starts on an empty queue
        assert servers.restarter_for(design) is not None  # s<seconds> crashes the queue's server
    assert not psutil.pid_exists(pid) and not os.path.exists(directory)


def kill_test(design, schedule_text, catalog):
    with stage(catalog, [design]) as on:
        server = on.servers._running["redis"]
        directory = server.directory
        history = run_phase(on, design, parse_schedule(schedule_text, design), SETTINGS)
        pid = server.pid  # a new process when an s point crashed and restarted it
    assert not psutil.pid_exists(pid) and not os.path.exists(directory)  # stopped with the campaign, removed
    return history, check_run(design, 1, history, catalog)


@pytest.mark.slow
def test_the_crawler_keeps_every_record_through_exact_kills_and_a_crash_of_its_queue_server(small_catalog):
    design = load_spec(DESIGN)
    # Exact points early (the n-th request of a start, whatever its speed), then 1 s after a start's first request,
    # then a crash of the private Redis 2.5 s after the last start's spawn (SIGKILL, started again on its
    # append-only file; the start dies with it). Every kill lands at work at any speed: a start of this crawler
    # lives 3 s past its last request (feapder's three idle looks a second apart), and one that finds its
    # queue empty crawls again from the first page (feapder's Spider), so no start ends before its point.
    history, verdict = kill_test(design, "r3,r6,f1,s2.5", small_catalog)
    assert verdict.kills == verdict.kills_planned == 4, verdict.problems
    assert [bool(k.get("server_restart_s")) for k in history.of_type("kill")] == [False, False, False, True]
    assert verdict.missing_records == 0 and verdict.correct_records == len(small_catalog.products)
    assert verdict.valid, verdict.problems
    assert len(history.of_type("process_started")) == 5  # four killed starts and the one that finished
