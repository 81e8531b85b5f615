"""Store-write points (`w5`) and the exact `r5+`: strace's log read, the write aimed at, and the same
point giving the same outcome on every repeat, for a Python design and a shell script alike."""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness.campaigns.exploration import explore_design
from killtest.harness.check.checker import check_run
from killtest.harness.design.registry import design_named
from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import parse_point
from killtest.harness.faults.points.request import AtRequest
from killtest.harness.faults.points.store_write import AtStoreWrite
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.faults.store_writes import parse_recording
from killtest.harness.running.orchestrator import Stage
from killtest.harness.running.runner import RunSettings, run_kill_test
from killtest.harness.running.write_plans import aimed, resolve_schedule, store_write_points
from killtest.harness.servers.common import REQUIRE_SERVERS_VARIABLE, ServerUnavailable, servers_required
from killtest.harness.servers.for_stores import StoreServers

needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
SETTINGS = RunSettings(lease_s=0.2, time_limit_s=60)
CATALOG = build_catalog(listing_pages=2, products_per_page=3)
VALUES = {"work_dir": "/tmp/run", "store": "/tmp/run/shop.sqlite"}
LOG = """\
100 write(1</tmp/run/start-000.out>, "{\\"event\\": \\"ready\\"}\\n", 19) = 19
100 sendto(5<TCP:[127.0.0.1:4000->127.0.0.1:8000]>, "GET /list/0 HTTP/1.1\\r\\nHo"..., 90, 0, NULL, 0) = 90
100 pwrite64(3</tmp/run/shop.sqlite-journal>, "\\0\\0"..., 512, 0) = 512
100 fdatasync(3</tmp/run/shop.sqlite-journal>) = 0
100 fdatasync(4</tmp/run>) = 0
100 sendto(5<TCP:[127.0.0.1:4000->127.0.0.1:8000]>, "GET /product/0 HTTP/1.1\\r\\n"..., 90, 0, NULL, 0) = 90
101 pwrite64(6</tmp/run/shop.sqlite-journal>, "\\0\\0"..., 512, 0) = 512
100 pwrite64(3</tmp/run/shop.sqlite>, "SQLite format 3\\0"..., 4096, 0) = 4096
100 unlink("/tmp/run/shop.sqlite-journal") = 0
100 write(7</tmp/elsewhere.log>, "x", 1) = 1
100 <... write resumed>) = 1
"""


def test_a_recording_keeps_the_writes_to_the_store_in_order_and_counts_them_per_thread_and_call():
    recording = parse_recording(LOG, VALUES)
    assert [(c.tid, c.syscall, c.count, c.paths) for c in recording.calls] == [
        (100, "pwrite64", 1, ("shop.sqlite-journal",)), (100, "fdatasync", 1, ("shop.sqlite-journal",)),
        (100, "fdatasync", 2, ("",)), (101, "pwrite64", 1, ("shop.sqlite-journal",)),
        (100, "pwrite64", 2, ("shop.sqlite",)), (100, "unlink", 1, ("shop.sqlite-journal",))]
    assert [e for e in recording.events if e[0] == "request"] == [("request", 1), ("request", 2)]
    assert recording.paths == ("", "shop.sqlite", "shop.sqlite-journal")


def test_a_write_is_aimed_by_its_call_and_count_and_one_another_thread_reaches_first_is_refused():
    recording = parse_recording(LOG, VALUES)
    plan = recording.plan_for_write(5)
    assert (plan.syscall, plan.when) == ("pwrite64", 2)
    assert plan.absolute_paths({"work_dir": "/tmp/other"}) == ["/tmp/other", "/tmp/other/shop.sqlite",
                                                               "/tmp/other/shop.sqlite-journal"]
    with pytest.raises(ValueError, match="strace counts per thread"):
        recording.plan_for_write(4)  # thread 101's first pwrite64: thread 100 made its first one before
    assert recording.reachable_writes() == [1, 2, 3, 5, 6]
    assert recording.plan_for_write(7) is None  # the start makes six: the point is never reached


def test_r_plus_is_the_first_store_write_after_the_request_was_sent_that_strace_can_reach():
    recording = parse_recording(LOG, VALUES)
    assert recording.write_after_request(1) == 1
    assert recording.write_after_request(2) == 4
    assert recording.write_after_request(3) is None
    # Write 4, thread 101's first pwrite64, comes after thread 100's first: strace cannot aim at it, so `r2+` is
    # aimed at write 5, the next it can reach (a threaded crawler's printed replay line was refused at write 4).
    assert aimed(AtRequest(2, after_response=True), recording).plan == recording.plan_for_write(5) is not None


def test_a_store_write_point_prints_as_written_and_refuses_what_it_cannot_do(monkeypatch):
    assert parse_point("w5") == AtStoreWrite(5) and parse_point("w5").spec == "w5"
    with pytest.raises(KilltestError, match="bad kill point"):
        parse_point("w0")
    with pytest.raises(KilltestError, match="one worker"):
        parse_point("w5").validate([design_named("idempotent")], 2)
    with pytest.raises(KilltestError, match="one worker"):
        parse_point("w5").validate([design_named("idempotent-pg")], 2)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(KilltestError, match="needs strace, which is not installed") as error:
        parse_point("w5").validate([design_named("idempotent")], 1)
    assert "\n" not in str(error.value)
    # A server's store needs no strace: the start's own proxy counts its statements, on one connection too.
    parse_point("w5").validate([design_named("idempotent-pg"), design_named("queue-bullmq")], 1)
    assert parse_point("w7:c2") == AtStoreWrite(7, connection=2) and parse_point("w7:c2").spec == "w7:c2"
    parse_point("w7:c2").validate([design_named("queue-bullmq")], 1)
    with pytest.raises(KilltestError, match="names a connection"):
        parse_point("w7:c2").validate([design_named("idempotent")], 1)


def kill_test(design, schedule_text, site, recordings=None):
    """One run of an aimed schedule: its kills, its store, and its verdict. `recordings`: a cache of the
    recordings that aim it (write_plans.RecordingCache), as explore shares one; without it, a recording of its own."""
    with StoreServers([design]) as servers:
        on = Stage(site, servers, {})
        schedule = resolve_schedule(parse_schedule(schedule_text, design), design, on, SETTINGS, cache=recordings)
        with tempfile.TemporaryDirectory(prefix="killtest-test-") as work_dir:
            history = run_kill_test(design, schedule, site, work_dir, SETTINGS)
    records = sorted((r["key"], sorted(r["fields"].items())) for r in history.of_type("store_record"))
    kills = [k["returncode"] for k in history.of_type("kill")]
    return kills, records, check_run(design, 1, history, site.catalog)


@pytest.mark.slow
@needs_strace
@pytest.mark.parametrize("name", ["zoo-done-before-record-cmd", "zoo-done-before-record-sh"])
def test_the_same_store_write_point_gives_the_same_outcome_on_every_repeat(name):
    design = design_named(name)
    if name.endswith("-sh") and not (shutil.which("sqlite3") and shutil.which("curl")):
        pytest.skip("the shell design needs sqlite3 and curl")
    with SiteServer(CATALOG) as site:
        listed: dict = {}
        writes = store_writes(design, site, listed)
        # Three writes spread over the crawl, each three times. Each repeat is aimed by a recording of its own
        # (the first by the one that listed the writes: the same uninterrupted first start), which aims the
        # three points alike, as explore's one recording aims all its points.
        recordings = (listed, {}, {})
        for point in (writes[len(writes) // 3], writes[len(writes) // 2], writes[-2]):
            outcomes = [kill_test(design, point, site, cache)[:2] for cache in recordings]
            assert outcomes[0] == outcomes[1] == outcomes[2], point
            assert outcomes[0][0] == [-9], point


def store_writes(design, site, recordings=None):
    """Every store write strace can aim at in the design's first start, as explore lists them (its recordings
    kept in `recordings`, which then aims a point as explore's does)."""
    with StoreServers([design]) as servers:
        return [p.spec for p in store_write_points(design, Stage(site, servers, {}), SETTINGS, cache=recordings)]


@pytest.mark.slow
@needs_strace
def test_a_store_write_point_finds_the_record_the_progress_first_mistake_loses():
    design = design_named("zoo-done-before-record-cmd")
    # One product a listing page: the last product's commits end the writes as on the six-product catalog, and
    # each run crawls 4 pages, not 8 (w99 of 111 loses first, where w159 of 171 did: 13 runs either way).
    with SiteServer(build_catalog(listing_pages=2, products_per_page=1)) as site:
        recordings: dict = {}
        writes = store_writes(design, site, recordings)
        # The last product's two commits are among the last writes: one of them is between the two. From the
        # last write back, to the first that loses (all 40 took 45 s on six products), each aimed by the
        # recording that listed the writes, as explore aims its points.
        lost = next((point for point in reversed(writes[-40:])
                     if kill_test(design, point, site, recordings)[2].missing_records), None)
    assert lost, "no store write between the two commits lost a record"


@pytest.mark.slow
@needs_strace
def test_r_plus_kills_at_the_first_store_write_after_the_answer_every_time():
    design = design_named("idempotent")
    with SiteServer(CATALOG) as site:
        outcomes = [kill_test(design, "r3+", site)[:2] for _ in range(3)]
    assert outcomes[0] == outcomes[1] == outcomes[2]
    assert outcomes[0][0] == [-9]


@pytest.mark.slow
@needs_strace
def test_explore_with_two_jobs_gives_the_points_and_verdicts_of_one_job():
    design = design_named("zoo-done-before-record")
    points = list(parse_schedule("r2,r5,w60,w75,w90,l:complete+3:2", design).points)
    one = explore_design(design, CATALOG, SETTINGS, points, jobs=1)
    two = explore_design(design, CATALOG, SETTINGS, points, jobs=2)
    assert [(o.point, o.landed, o.valid, o.problems) for o in one.outcomes] == \
        [(o.point, o.landed, o.valid, o.problems) for o in two.outcomes]
    assert any(not o.valid for o in one.outcomes)


def server_stage(design_name):
    """The site and the private server `design_name`'s store needs, shared by a module's tests."""
    try:
        servers = StoreServers([design_named(design_name)]).__enter__()
    except ServerUnavailable as missing:
        if servers_required():
            pytest.fail(f"{missing} ({REQUIRE_SERVERS_VARIABLE} is set, so a missing server fails)")
        pytest.skip(str(missing))
    try:
        with SiteServer(CATALOG) as site:
            yield Stage(site, servers, {})
    finally:
        servers.__exit__()


@pytest.fixture(scope="module")
def pg_stage():
    yield from server_stage("idempotent-pg")


@pytest.fixture(scope="module")
def redis_stage():
    yield from server_stage("queue-bullmq")


def pg_kill_test(design, schedule_text, on):  # a PostgreSQL or a Redis store
    """One run on the shared stage: its kills and the records its store held."""
    schedule = resolve_schedule(parse_schedule(schedule_text, design), design, on, SETTINGS)
    with tempfile.TemporaryDirectory(prefix="killtest-test-") as work_dir:
        history = run_kill_test(design, schedule, on.site, work_dir, SETTINGS, dsn=on.servers.dsn_for(design))
    records = sorted((r["key"], sorted(r["fields"].items())) for r in history.of_type("store_record"))
    return [k["returncode"] for k in history.of_type("kill")], records, check_run(design, 1, history, on.site.catalog)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["idempotent-pg", "zoo-done-before-record-pg"])
def test_the_same_statement_point_gives_the_same_outcome_on_every_repeat(pg_stage, name):
    design = design_named(name)
    writes = [p.spec for p in store_write_points(design, pg_stage, SETTINGS)]
    assert len(writes) > 20, writes  # the schema, then a few statements per page
    for point in (writes[len(writes) // 3], writes[-3], writes[-2]):
        outcomes = [pg_kill_test(design, point, pg_stage)[:2] for _ in range(2)]
        assert outcomes[0] == outcomes[1], point
        assert outcomes[0][0] == [-9], point


@pytest.mark.slow
def test_explore_finds_no_broken_statement_point_in_the_idempotent_design_and_some_in_its_zoo_twin(pg_stage):
    correct, broken = design_named("idempotent-pg"), design_named("zoo-done-before-record-pg")
    # Every statement of the correct design, on a crawl of one listing page and two products: every kind of
    # statement it makes comes at least once, a product's (claim, record, done mark) twice, in 18 points where
    # the six-product catalog has 42 (118 s of a loaded CI for those, 35 s for these).
    small = build_catalog(listing_pages=1, products_per_page=2)
    with SiteServer(small) as site:
        points = store_write_points(correct, Stage(site, pg_stage.servers, {}), SETTINGS)
    found = explore_design(correct, small, SETTINGS, points)
    assert [o.point for o in found.outcomes] == [p.spec for p in points]
    assert all(o.landed for o in found.outcomes) and found.broken == []
    # The zoo design's last page: its mark-done commit, then its record's statements; a kill between loses it.
    last = store_write_points(broken, pg_stage, SETTINGS)[-8:]
    lost = explore_design(broken, CATALOG, SETTINGS, last).broken
    assert lost and all("lost 1 of 6 records" in " ".join(o.problems) for o in lost), lost


@pytest.mark.slow
@pytest.mark.serial  # timing-sensitive: BullMQ's timer writes shift w<n>:c<k> on a loaded machine
def test_a_connections_write_point_on_redis_repeats_and_finds_the_gap_between_the_set_and_the_queue(redis_stage):
    """BullMQ's queue (connection 2) adds each link's job after the design's own client (connection 1) put it
    in the visited set: trusting the set, a kill before the add loses the page; the correct design re-adds."""
    broken, correct = design_named("zoo-queue-set-only"), design_named("queue-bullmq")
    offered = [p.spec for p in store_write_points(correct, redis_stage, SETTINGS)]
    assert "w3:c2" in offered and "w3:c1" in offered, offered
    outcomes = [pg_kill_test(broken, "w3:c2", redis_stage) for _ in range(2)]
    assert outcomes[0][:2] == outcomes[1][:2] and outcomes[0][0] == [-9]
    assert outcomes[0][2].missing_records == 1
    kills, _, verdict = pg_kill_test(correct, "w3:c2", redis_stage)
    assert kills == [-9] and verdict.validity == "valid", verdict.problems


def killtest(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "killtest", *args, "--listing-pages", "2", "--per-page", "3",
                           "--no-plot", "--lease", "0.2"], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("name, schedule", [pytest.param("idempotent", "w60,w75", marks=needs_strace),
                                            ("idempotent-pg", "w5,w20")])
def test_run_takes_a_schedule_of_store_write_points(tmp_path, name, schedule):
    if name.endswith("-pg") and not shutil.which("postgres") and not os.environ.get(REQUIRE_SERVERS_VARIABLE):
        pytest.skip("PostgreSQL is not installed")
    done = killtest("run", "--design", name, "--schedule", schedule, "--runs", "2", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("kills 2/2") == 2, done.stderr[-2000:]


@pytest.mark.slow
def test_run_refuses_a_file_stores_write_point_for_two_designs_at_once(tmp_path):
    done = killtest("run", "--design", "idempotent", "--design", "naive", "--schedule", "w5", "--out", str(tmp_path))
    assert done.returncode == 2 and "one --design at a time" in done.stderr and "Traceback" not in done.stderr
