"""Store-write points (`w5`) and the exact `r5+`: strace's log read, the write aimed at, and the same
point giving the same outcome on every repeat, for a Python design and a shell script alike."""

import shutil
import tempfile

import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness.check.checker import check_run
from killtest.harness.design.registry import design_named
from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import parse_point
from killtest.harness.faults.points.store_write import AtStoreWrite
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.faults.store_writes import parse_recording
from killtest.harness.running.exploration import explore_design
from killtest.harness.running.orchestrator import Stage
from killtest.harness.running.runner import RunSettings, run_kill_test
from killtest.harness.running.write_plans import resolve_schedule, store_write_points
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


def test_r_plus_is_the_first_store_write_after_the_request_was_sent():
    recording = parse_recording(LOG, VALUES)
    assert recording.write_after_request(1) == 1
    assert recording.write_after_request(2) == 4
    assert recording.write_after_request(3) is None


def test_a_store_write_point_prints_as_written_and_refuses_what_it_cannot_do(monkeypatch):
    assert parse_point("w5") == AtStoreWrite(5) and parse_point("w5").spec == "w5"
    with pytest.raises(KilltestError, match="bad kill point"):
        parse_point("w0")
    with pytest.raises(KilltestError, match="PostgreSQL|postgres store"):
        parse_point("w5").validate([design_named("idempotent-pg")], 1)
    with pytest.raises(KilltestError, match="one worker"):
        parse_point("w5").validate([design_named("idempotent")], 2)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(KilltestError, match="needs strace, which is not installed") as error:
        parse_point("w5").validate([design_named("idempotent")], 1)
    assert "\n" not in str(error.value)


def kill_test(design, schedule_text, site):
    """One run of an aimed schedule: its kills, its store, and its verdict."""
    with StoreServers([design]) as servers:
        on = Stage(site, servers, {})
        schedule = resolve_schedule(parse_schedule(schedule_text, design), design, on, SETTINGS)
        with tempfile.TemporaryDirectory(prefix="killtest-test-") as work_dir:
            history = run_kill_test(design, schedule, site, work_dir, SETTINGS)
    records = sorted((r["key"], sorted(r["fields"].items())) for r in history.of_type("store_record"))
    kills = [k["returncode"] for k in history.of_type("kill")]
    return kills, records, check_run(design, 1, history, site.catalog)


@needs_strace
@pytest.mark.parametrize("name", ["zoo-done-before-record-cmd", "zoo-done-before-record-sh"])
def test_the_same_store_write_point_gives_the_same_outcome_on_every_repeat(name):
    design = design_named(name)
    if name.endswith("-sh") and not (shutil.which("sqlite3") and shutil.which("curl")):
        pytest.skip("the shell design needs sqlite3 and curl")
    with SiteServer(CATALOG) as site:
        writes = store_writes(design, site)
        # Three writes spread over the crawl, each three times.
        for point in (writes[len(writes) // 3], writes[len(writes) // 2], writes[-2]):
            outcomes = [kill_test(design, point, site)[:2] for _ in range(3)]
            assert outcomes[0] == outcomes[1] == outcomes[2], point
            assert outcomes[0][0] == [-9], point


def store_writes(design, site):
    """Every store write strace can aim at in the design's first start, as explore lists them."""
    with StoreServers([design]) as servers:
        return [p.spec for p in store_write_points(design, Stage(site, servers, {}), SETTINGS)]


@needs_strace
def test_a_store_write_point_finds_the_record_the_progress_first_mistake_loses():
    design = design_named("zoo-done-before-record-cmd")
    with SiteServer(CATALOG) as site:
        writes = store_writes(design, site)
        # The last product's two commits are among the last writes: one of them is between the two.
        lost = [point for point in writes[-40:] if kill_test(design, point, site)[2].missing_records]
    assert lost, "no store write between the two commits lost a record"


@needs_strace
def test_r_plus_kills_at_the_first_store_write_after_the_answer_every_time():
    design = design_named("idempotent")
    with SiteServer(CATALOG) as site:
        outcomes = [kill_test(design, "r3+", site)[:2] for _ in range(3)]
    assert outcomes[0] == outcomes[1] == outcomes[2]
    assert outcomes[0][0] == [-9]


@needs_strace
def test_explore_with_two_jobs_gives_the_points_and_verdicts_of_one_job():
    design = design_named("zoo-done-before-record")
    points = list(parse_schedule("r2,r5,w60,w75,w90,l:complete+3:2", design).points)
    one = explore_design(design, CATALOG, SETTINGS, points, jobs=1)
    two = explore_design(design, CATALOG, SETTINGS, points, jobs=2)
    assert [(o.point, o.landed, o.valid, o.problems) for o in one.outcomes] == \
        [(o.point, o.landed, o.valid, o.problems) for o in two.outcomes]
    assert any(not o.valid for o in one.outcomes)
