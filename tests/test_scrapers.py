"""The shipped designs run as real programs against the real fixture site."""

import json
import sqlite3
import subprocess
import sys
import time

import pytest

from killtest.harness.design.model import PROJECT_ROOT, Launch
from killtest.harness.design.registry import design_named
from killtest.harness.design.stores import stored_records


def pairs(records):
    return [(r.key, r.fields["price"]) for r in records]


def store_of(name, work_dir):
    """Where design `name` keeps its store when it runs in `work_dir`."""
    return design_named(name).store_location(Launch("http://unused", str(work_dir), 1.0))


def run_design(name, base_url, work_dir, crawl=1):
    launch = Launch(base_url, str(work_dir), lease_s=1.0, crawl=crawl)
    return subprocess.run(design_named(name).command(launch), capture_output=True, text=True, timeout=60,
                          cwd=PROJECT_ROOT, env=design_named(name).environment(launch))


@pytest.mark.slow
def test_idempotent_design_stores_every_product_once_in_one_full_crawl(site, small_catalog, tmp_path):
    done = run_design("idempotent", site.base_url, tmp_path)
    assert done.returncode == 0, done.stderr
    records = stored_records(design_named("idempotent"), store_of("idempotent", tmp_path))
    assert sorted(pairs(records)) == sorted(small_catalog.prices_by_sku().items())
    assert {r.key: r.fields for r in records} == small_catalog.truth()
    assert site.request_log.total == small_catalog.full_crawl_requests


@pytest.mark.slow
def test_idempotent_design_rerun_fetches_nothing_and_rewrites_nothing(site, tmp_path):
    db_path = store_of("idempotent", tmp_path)
    run_design("idempotent", site.base_url, tmp_path)
    before = sqlite3.connect(db_path).execute("SELECT record_id, last_changed FROM records").fetchall()
    served = site.request_log.total
    assert run_design("idempotent", site.base_url, tmp_path).returncode == 0
    assert site.request_log.total == served  # the durable frontier says every page is done
    assert sqlite3.connect(db_path).execute("SELECT record_id, last_changed FROM records").fetchall() == before


@pytest.mark.slow
def test_idempotent_recrawl_fetches_every_page_again_and_rewrites_nothing(site, small_catalog, tmp_path):
    db_path = store_of("idempotent", tmp_path)
    run_design("idempotent", site.base_url, tmp_path)
    before = sqlite3.connect(db_path).execute("SELECT record_id, last_changed FROM records").fetchall()
    assert run_design("idempotent", site.base_url, tmp_path, crawl=2).returncode == 0
    assert site.request_log.total == 2 * small_catalog.full_crawl_requests
    assert sqlite3.connect(db_path).execute("SELECT record_id, last_changed FROM records").fetchall() == before


def test_idempotent_upsert_leaves_unchanged_records_alone_and_updates_changed_ones(tmp_path):
    from killtest.scrapers import idempotent

    db = idempotent.open_store(str(tmp_path / "s.sqlite"))
    idempotent.discover(db, 1, ["/product/1"])
    idempotent.complete(db, 1, "/product/1", record={"sku": "SKU-1", "price": "1.00"})
    first = db.execute("SELECT last_changed FROM records").fetchone()[0]
    time.sleep(0.01)
    idempotent.complete(db, 1, "/product/1", record={"sku": "SKU-1", "price": "1.00"})
    assert db.execute("SELECT last_changed FROM records").fetchone()[0] == first
    idempotent.complete(db, 1, "/product/1", record={"sku": "SKU-1", "price": "2.00"})
    rows = db.execute("SELECT data, last_changed FROM records").fetchall()
    assert len(rows) == 1 and json.loads(rows[0][0])["price"] == "2.00" and rows[0][1] > first


def test_idempotent_claim_reads_two_index_entries_not_the_whole_crawl(tmp_path):
    """A claim that scans the crawl's done rows makes a crawl O(n^2): 4 ms a page at 20,000 products."""
    from killtest.scrapers import idempotent

    db = idempotent.open_store(str(tmp_path / "s.sqlite"))
    plan = [row[3] for row in db.execute("EXPLAIN QUERY PLAN " + idempotent.CLAIM, (0, 1, 1, 0))]
    reads = [step for step in plan if " frontier " in f"{step} "]
    assert all(step.startswith("SEARCH frontier USING") for step in reads), plan  # no SCAN of the table
    assert sum("INDEX frontier_by_status (crawl=? AND status=?)" in step for step in reads) == 2, plan
    assert not any("TEMP B-TREE" in step for step in plan), plan  # no sort of the crawl's rows


def test_idempotent_claim_takes_the_oldest_claimable_path_and_skips_held_leases(tmp_path):
    from killtest.scrapers import idempotent

    db = idempotent.open_store(str(tmp_path / "s.sqlite"))
    idempotent.discover(db, 1, ["/a", "/b", "/c", "/d"])
    now = time.time()
    db.execute("UPDATE frontier SET status = 'done' WHERE path = '/a'")
    db.execute("UPDATE frontier SET status = 'leased', leased_until = ? WHERE path = '/b'", (now + 60,))
    db.execute("UPDATE frontier SET status = 'leased', leased_until = ? WHERE path = '/d'", (now - 1,))
    assert idempotent.claim(db, 1, 5.0) == "/c"  # /b is held; /c is pending and older than /d's lapsed lease
    assert idempotent.claim(db, 1, 5.0) == "/d"  # a lapsed lease comes back by itself
    assert idempotent.claim(db, 1, 5.0) is None
    assert idempotent.claim(db, 2, 5.0) is None  # another crawl's frontier is its own


@pytest.mark.serial  # a 4 s lease against the design's start-up: make test's starved background can outlast it
def test_idempotent_design_waits_for_a_held_lease_instead_of_exiting(site, small_catalog, tmp_path):
    from killtest.scrapers import idempotent

    db_path = store_of("idempotent", tmp_path)
    db = idempotent.open_store(db_path)
    # As a killed start leaves it: the first page claimed for another 4 s, nothing committed. (1.5 s was
    # shorter than the design's own start-up on a loaded machine: the lease had expired before it looked.)
    idempotent.discover(db, 1, ["/list/0"])
    db.execute("UPDATE frontier SET status = 'leased', leased_until = ?", (time.time() + 4,))
    db.close()
    done = run_design("idempotent", site.base_url, tmp_path)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line)["event"] for line in done.stdout.splitlines()]
    assert "lease_wait" in events
    assert len(stored_records(design_named("idempotent"), db_path)) == len(small_catalog.products)


@pytest.mark.slow
def test_naive_design_stores_every_product_again_on_every_start(site, small_catalog, tmp_path):
    for _ in range(2):
        assert run_design("naive", site.base_url, tmp_path).returncode == 0
    records = pairs(stored_records(design_named("naive"), store_of("naive", tmp_path)))
    assert len(records) == 2 * len(small_catalog.products)
    assert set(records) == set(small_catalog.prices_by_sku().items())
    assert site.request_log.total == 2 * small_catalog.full_crawl_requests


def test_a_missing_database_directory_is_one_line_and_exit_status_2(site, tmp_path):
    for name in ["naive", "idempotent"]:
        done = run_design(name, site.base_url, tmp_path / "absent")
        assert done.returncode == 2
        assert done.stderr.strip().count("\n") == 0
        assert "does not exist" in done.stderr and "Traceback" not in done.stderr


def test_a_bad_lease_is_refused(site, tmp_path):
    argv = [sys.executable, "-m", "killtest.scrapers.idempotent", "--base", site.base_url,
            "--db", str(tmp_path / "s.sqlite"), "--lease", "0"]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=30)
    assert done.returncode == 2 and "--lease" in done.stderr
