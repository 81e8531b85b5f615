"""PostgreSQL stores: a private server the harness starts and removes, and the idempotent design on it."""

import os

import psutil
import pytest

from killtest.harness.check.checker import check_run
from killtest.harness.design.registry import design_named
from killtest.harness.design.specfile import load_spec
from killtest.harness.design.stores import stored_records
from killtest.harness.errors import KilltestError
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.running.runner import RunSettings, run_kill_test
from killtest.harness.servers.common import REQUIRE_SERVERS_VARIABLE, ServerUnavailable, servers_required
from killtest.harness.servers.private_postgres import PrivatePostgres


@pytest.fixture(scope="module")
def postgres():
    try:
        server = PrivatePostgres().start()
    except ServerUnavailable as missing:
        if servers_required():
            pytest.fail(f"{missing} ({REQUIRE_SERVERS_VARIABLE} is set, so a missing server fails)")
        pytest.skip(str(missing))
    yield server
    server.stop()


@pytest.mark.slow
def test_the_private_server_listens_on_loopback_only_and_leaves_nothing_behind():
    try:
        server = PrivatePostgres().start()
    except ServerUnavailable as missing:
        if servers_required():
            raise
        pytest.skip(str(missing))
    directory, pid = server._dir, server.pid
    listening = {c.laddr.ip for c in psutil.Process(pid).net_connections(kind="inet") if c.status == "LISTEN"}
    assert listening == {"127.0.0.1"}
    assert server.fresh_database() != server.fresh_database()  # every run gets its own empty database
    server.stop()
    assert not os.path.exists(directory) and not psutil.pid_exists(pid)


@pytest.mark.slow
def test_the_idempotent_design_on_postgresql_keeps_one_correct_row_per_product_after_kills(postgres, site, tmp_path):
    design = design_named("idempotent-pg")
    # In complete(), before the page is marked done: inside the transaction that also saves the record.
    schedule = parse_schedule("r7,l:scrapers/idempotent_pg.py:complete+7:3,r12,t0.45")
    assert open(design.source_file).readlines()[schedule.points[1].line - 1].strip() == "mark_done(db, crawl, path)"
    history = run_kill_test(design, schedule, site, str(tmp_path), RunSettings(lease_s=0.5, time_limit_s=60),
                            dsn=postgres.fresh_database())
    verdict = check_run(design, 1, history, site.catalog)
    assert verdict.kills >= 3
    assert verdict.rows == verdict.correct_records == len(site.catalog.products), verdict.problems
    assert verdict.requests <= site.catalog.full_crawl_requests + verdict.kills
    assert verdict.valid, verdict.problems
    assert [p.pid for p in psutil.Process().children()] == [postgres.pid]  # no scraper left, only the server


def test_a_postgres_records_query_that_fails_names_its_spec_line(postgres, tmp_path):
    spec = tmp_path / "pg.toml"
    spec.write_text('[design]\nname = "pg"\nmodule = "m"\n[store]\nkind = "postgres"\n'
                    'records = "SELECT sku, price FROM records WHERE nonsense"\n')
    design = load_spec(str(spec))
    dsn = postgres.fresh_database()
    assert stored_records(design, dsn) == []  # no table yet: killed before its schema
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute("CREATE TABLE records (sku TEXT, price TEXT)")
    with pytest.raises(KilltestError, match=rf"^{spec}:6: store.records failed on the store: column \"nonsense\""):
        stored_records(design, dsn)


@pytest.mark.slow
def test_the_idempotent_design_on_postgresql_survives_a_crash_and_restart_of_the_server_itself(postgres, site,
                                                                                             tmp_path):
    design = design_named("idempotent-pg")
    history = run_kill_test(design, parse_schedule("r9,s0.35,r15"), site, str(tmp_path),
                            # 3 s leases: one of two workers starved past a shorter one loses its page to the other
                            RunSettings(lease_s=3.0, time_limit_s=60, workers=2), dsn=postgres.fresh_database(),
                            restart_store=postgres.crash_and_restart)
    verdict = check_run(design, 1, history, site.catalog)
    restarts = [k for k in history.of_type("kill") if "server_restart_s" in k]
    assert len(restarts) == 1 and verdict.kills >= 2
    assert verdict.rows == verdict.correct_records == len(site.catalog.products), verdict.problems
    assert verdict.valid, verdict.problems
