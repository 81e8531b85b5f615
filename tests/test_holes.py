"""Holes (harness/check/holes.py) and the power-loss zoo pair (scrapers/zoo/split_stores*.py).

The pure check is held to hand-built histories; the pair runs for real against the shop, under the
FUSE power-loss mount for the `x` points: the zoo design survives a SIGKILL at the 5th request and
loses records with holes when the power goes there; its twin (synchronous=FULL) survives both.
"""

from __future__ import annotations

import os
import shutil

import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.harness.check.checker import check_run
from killtest.harness.check.holes import hole_keys
from killtest.harness.design.registry import design_named
from killtest.harness.faults import power_loss
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.history import History
from killtest.harness.running.orchestrator import run_phase, stage
from killtest.harness.running.runner import RunSettings

REASON = power_loss.unavailable_reason() or (None if shutil.which("strace") else "strace is not installed")
if REASON is not None and os.environ.get("KILLTEST_REQUIRE_SERVERS") == "1":
    raise RuntimeError(f"KILLTEST_REQUIRE_SERVERS=1 but a power cut cannot run here: {REASON}")
needs_fuse = pytest.mark.skipif(REASON is not None, reason=f"power-cut points unavailable: {REASON}")
PATHS = {"SKU-1": "/product/1", "SKU-2": "/product/2"}


def history(fetched: list[tuple[int, str]], outcome: str = "completed", crawls: tuple[int, ...] = (1, 1)) -> History:
    h = History()
    for start, crawl in enumerate(crawls):
        h.add("process_started", start * 1.0, start=start, crawl=crawl)
    for start, path in fetched:
        h.add("request", start * 1.0 + 0.5, path=path, status=200, start=start)
    h.add("run_finished", 9.0, outcome=outcome)
    return h


def test_a_lost_record_whose_page_was_fetched_is_a_hole_and_one_never_fetched_is_not():
    h = history([(0, "/product/1")])
    assert hole_keys(h, ["SKU-1", "SKU-2"], PATHS) == {"SKU-1": 0.5}


def test_a_page_still_leased_when_the_crawl_ended_is_a_claim_given_up_not_a_hole():
    h = history([(0, "/product/1"), (1, "/product/2")])
    h.add("process_exited", 8.0, start=1, returncode=0, held_leases=["/product/1"])
    assert hole_keys(h, ["SKU-1", "SKU-2"], PATHS) == {"SKU-2": 1.5}


def test_a_crawl_that_did_not_finish_by_itself_has_no_hole_only_unfetched_pages():
    assert hole_keys(history([(0, "/product/1")], outcome="timed_out"), ["SKU-1"], PATHS) == {}


def test_only_the_final_crawl_counts_and_an_error_answer_is_no_fetch():
    h = history([(0, "/product/1")], crawls=(1, 2))
    assert hole_keys(h, ["SKU-1"], PATHS) == {}  # fetched by crawl 1, the re-crawl never got to it
    h = History()
    h.add("process_started", 0.0, start=0, crawl=1)
    h.add("request", 0.5, path="/product/1", status=500, start=0)
    h.add("run_finished", 1.0, outcome="completed")
    assert hole_keys(h, ["SKU-1"], PATHS) == {}


@pytest.mark.parametrize("reached_no_one", [{"undelivered": True}, {"late": True}])
def test_an_answer_that_reached_no_one_is_no_fetch(reached_no_one):
    """Answered after its start was killed at it (an `r5`), after its client hung up, or to a start dead before the
    site read the request: the crawler never read the page, so its lost record is lost, not a hole."""
    h = History()
    h.add("process_started", 0.0, start=0, crawl=1)
    h.add("request", 0.5, path="/product/1", status=200, start=0, **reached_no_one)
    h.add("request", 0.6, path="/product/2", status=200, start=0)
    h.add("run_finished", 1.0, outcome="completed")
    assert hole_keys(h, ["SKU-1", "SKU-2"], PATHS) == {"SKU-2": 0.6}


def run(design: str, schedule: str, tmp_path) -> list[str]:
    catalog = build_catalog(listing_pages=2, products_per_page=3)
    chosen = design_named(design)
    with stage(catalog, [chosen]) as on:
        h = run_phase(on, chosen, parse_schedule(schedule), RunSettings(lease_s=1.0, time_limit_s=30),
                      work_dir=str(tmp_path))
        return check_run(chosen, 1, h, on.site.catalog).findings


@pytest.mark.fault("x")
@needs_fuse
def test_the_zoo_pair_a_power_cut_makes_holes_in_the_sync_off_design_and_nothing_in_its_twin(tmp_path):
    assert run("zoo-split-stores", "r5", tmp_path) == []  # a SIGKILL at the same request loses nothing
    found = run("zoo-split-stores", "xr5", tmp_path)
    assert "lost" in found and "hole" in found, found
    assert run("split-stores-full", "xr5", tmp_path) == []
    assert run("split-stores-full", "r5", tmp_path) == []
    assert list(tmp_path.iterdir()) == []
