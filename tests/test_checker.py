"""The checker on hand-made histories: each finding from the smallest history that shows it."""

import signal

import pytest

from fixture_site.catalog import build_catalog
from harness.checker import check_run, compare_designs
from harness.designs import BUILT_IN_DESIGNS
from harness.history import History

CATALOG = build_catalog(listing_pages=2, products_per_page=3, seed=1)  # 6 products, 8 requests
IDEMPOTENT, NAIVE = BUILT_IN_DESIGNS["idempotent"], BUILT_IN_DESIGNS["naive"]
ALL_PATHS = ["/list/0", *[p.path for p in CATALOG.products[:3]], "/list/1", *[p.path for p in CATALOG.products[3:]]]


def history(kills=(), extra_requests=(), outcome="completed", delays=None, requests_before_kill=2):
    """Starts killed after `requests_before_kill` requests each, then one start that fetches the rest."""
    h = History()
    h.add("run_started", 0.0, design="x", seed=5, kill_delays_s=list(delays if delays is not None else [0.5] * len(kills)),
          time_limit_s=60, products=len(CATALOG.products), full_crawl_requests=CATALOG.full_crawl_requests)
    t, paths = 0.0, list(ALL_PATHS)
    for start, kill in enumerate(kills):
        h.add("process_started", t, start=start, pid=100 + start)
        for _ in range(requests_before_kill):
            t += 0.01
            h.add("request", t, path=paths.pop(0) if paths else "/list/0", status=200, start=start)
        t += 0.01
        h.add("kill", t, start=start, signal="SIGKILL", returncode=kill.get("returncode", -signal.SIGKILL),
              held_leases=kill.get("held", []))
    last = len(kills)
    h.add("process_started", t, start=last, pid=200)
    for path in paths + list(extra_requests):
        t += 0.01
        h.add("request", t, path=path, status=200, start=last)
    h.add("run_finished", t + 0.01, outcome=outcome, wall_s=round(t + 0.01, 4))
    return h


def truth():
    return list(CATALOG.prices_by_sku().items())


KILLED_TWICE = [{"held": ["/product/0"]}, {"held": ["/product/0", "/product/2"]}]


def test_a_clean_idempotent_run_is_valid_with_its_figures():
    v = check_run(IDEMPOTENT, 1, history(KILLED_TWICE, extra_requests=["/product/2"]), truth(), CATALOG)
    assert v.valid, v.problems
    assert (v.rows, v.distinct_records, v.correct_records, v.missing_records) == (6, 6, 6, 0)
    assert (v.requests, v.repeated_requests, v.paths_fetched_again) == (9, 1, 1)
    assert v.duplicate_ratio == 1.0 and v.kills == 2 and v.kills_between_lease_and_commit == 2


def test_duplicate_rows_break_the_idempotent_promise():
    v = check_run(IDEMPOTENT, 1, history(KILLED_TWICE), truth() + truth()[:2], CATALOG)
    assert not v.valid and any("8 rows for 6 products" in p for p in v.problems)


def test_a_lost_record_is_reported():
    v = check_run(IDEMPOTENT, 1, history(KILLED_TWICE), truth()[1:], CATALOG)
    assert v.missing_records == 1 and any("lost 1 of 6" in p for p in v.problems)


def test_a_wrong_value_is_reported():
    records = truth()
    records[0] = (records[0][0], "0.01")
    v = check_run(IDEMPOTENT, 1, history(KILLED_TWICE), records, CATALOG)
    assert v.wrong_records == 1 and v.correct_records == 5 and not v.valid


def test_a_record_not_on_the_site_is_unexpected():
    v = check_run(IDEMPOTENT, 1, history(KILLED_TWICE), truth() + [("SKU-NOPE", "1.00")], CATALOG)
    assert v.unexpected_records == 1 and not v.valid


def test_more_requests_than_minimum_plus_kills_break_the_idempotent_promise():
    v = check_run(IDEMPOTENT, 1, history(KILLED_TWICE, extra_requests=["/list/0"] * 3), truth(), CATALOG)
    assert any("11 requests, more than 8 + 2 kills" in p for p in v.problems)


def test_a_run_that_never_finished_is_a_liveness_failure():
    v = check_run(IDEMPOTENT, 1, history(KILLED_TWICE, outcome="timed_out"), truth(), CATALOG)
    assert any(p.startswith("liveness") for p in v.problems)


def test_a_run_where_no_kill_landed_fails_loudly():
    missed = [{"returncode": 0}, {"returncode": 0}]
    v = check_run(IDEMPOTENT, 1, history(missed), truth(), CATALOG)
    assert v.kills == 0 and any("no kill landed" in p for p in v.problems)


def test_kills_before_the_first_request_are_counted_apart():
    v = check_run(NAIVE, 1, history(KILLED_TWICE, requests_before_kill=0), truth(), CATALOG)
    assert v.kills == 2 and v.kills_before_first_request == 2


def test_kills_not_delivered_because_the_crawl_finished_are_counted():
    v = check_run(IDEMPOTENT, 1, history(KILLED_TWICE, delays=[0.5] * 5), truth(), CATALOG)
    assert v.kills_planned == 5 and v.kills_not_delivered == 3


def test_the_naive_control_must_show_duplicates_when_kills_landed_mid_crawl():
    assert not check_run(NAIVE, 1, history(KILLED_TWICE), truth(), CATALOG).valid
    assert check_run(NAIVE, 1, history(KILLED_TWICE), truth() + truth()[:3], CATALOG).valid


@pytest.mark.parametrize("held, expected", [
    ([[], []], 0),
    ([["/a"], ["/a"]], 1),  # the second kill caught no new claim: the old lease is still running out
    ([["/a"], ["/a", "/b"], ["/b"]], 2),
])
def test_a_kill_between_lease_and_commit_leaves_a_lease_that_was_not_there_before(held, expected):
    kills = [{"held": h} for h in held]
    assert check_run(IDEMPOTENT, 1, history(kills), truth(), CATALOG).kills_between_lease_and_commit == expected


def test_comparison_fails_when_the_idempotent_design_is_not_faster_on_the_same_schedule():
    fast = check_run(IDEMPOTENT, 1, history(KILLED_TWICE), truth(), CATALOG)
    slow = check_run(NAIVE, 1, history(KILLED_TWICE), truth() + truth(), CATALOG)
    slow.wall_s = fast.wall_s + 1.0
    assert compare_designs([fast, slow], BUILT_IN_DESIGNS) == []
    slow.wall_s = fast.wall_s - 0.1
    assert len(compare_designs([fast, slow], BUILT_IN_DESIGNS)) == 1


def test_a_kill_while_the_start_sleeps_on_a_held_lease_is_counted_as_such():
    h = history(KILLED_TWICE, requests_before_kill=0)
    kill = h.of_type("kill")[1]
    h.add("scraper_event", kill["t"] - 0.005, start=kill["start"], name="lease_wait", seconds=0.5)
    v = check_run(IDEMPOTENT, 1, h.sorted(), truth(), CATALOG)
    assert v.kills_during_lease_wait == 1
