"""Hypothesis fuzzes exact crash points; a failure shrinks to the smallest schedule and prints its replay."""

import tempfile

import pytest
from hypothesis import find, given, note, settings, strategies as st

from fixture_site.catalog import build_catalog
from fixture_site.server import SiteServer
from harness.checker import check_run
from harness.designs import design_named
from harness.explore import commit_path_lines, explore
from harness.runner import RunSettings, run_kill_test
from harness.schedule import AtLine, AtRequest, KillSchedule, parse_schedule

# The catalog `killtest replay --listing-pages 2 --per-page 3` builds, so a printed replay is exact.
CATALOG = build_catalog(listing_pages=2, products_per_page=3)  # 8 requests for a full crawl
SETTINGS = RunSettings(lease_s=0.3, time_limit_s=60)


@pytest.fixture(scope="module")
def small_site():
    with SiteServer(CATALOG) as server:
        yield server


def kill_schedules(design):
    """One to three exact kill points: at a request, or at a line of the design's commit path."""
    lines = [AtLine(path, line, hit) for path, line in commit_path_lines(design) for hit in (1, 2, 3)]
    point = st.one_of(st.builds(AtRequest, st.integers(1, CATALOG.full_crawl_requests)), st.sampled_from(lines))
    return st.lists(point, min_size=1, max_size=3).map(lambda points: KillSchedule(seed=None, points=tuple(points)))


def kill_test(design, schedule, site):
    with tempfile.TemporaryDirectory(prefix="killtest-fuzz-") as work_dir:
        history = run_kill_test(design, schedule, site, work_dir, SETTINGS)
    return history, check_run(design, 1, history, site.catalog)


def replay_command(design, schedule) -> str:
    return (f"killtest replay --design {design.name} --schedule {schedule.spec} --listing-pages 2 --per-page 3"
            f" --lease {SETTINGS.lease_s:g}")


@given(schedule=kill_schedules(design_named("idempotent")))
def test_idempotent_design_keeps_its_promises_at_any_exact_crash_points(schedule, small_site):
    note(f"replay: {replay_command(design_named('idempotent'), schedule)}")
    _, verdict = kill_test(design_named("idempotent"), schedule, small_site)
    assert verdict.rows == verdict.correct_records == len(CATALOG.products)
    assert verdict.missing_records == 0 and verdict.unexpected_records == 0
    assert verdict.requests <= CATALOG.full_crawl_requests + verdict.kills
    assert verdict.outcome == "completed"


def test_an_exact_schedule_gives_the_same_outcome_on_every_repeat(small_site):
    schedule = parse_schedule("r5,l:scrapers/idempotent.py:90:2,r1")
    outcomes = []
    for _ in range(2):
        history, verdict = kill_test(design_named("idempotent"), schedule, small_site)
        served = [(r["start"], r["path"]) for r in history.of_type("request")]
        held = [k["held_leases"] for k in history.of_type("kill")]
        outcomes.append((verdict.rows, verdict.requests, verdict.kills, served, held))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][2] == 3


def test_fuzzing_catches_the_design_that_marks_done_before_saving_and_shrinks_to_one_kill(small_site):
    broken = design_named("zoo-done-before-record")

    def breaks_a_promise(schedule):
        return not kill_test(broken, schedule, small_site)[1].valid

    smallest = find(kill_schedules(broken), breaks_a_promise,
                    settings=settings(max_examples=60, deadline=None, database=None))
    assert smallest.kills == 1, replay_command(broken, smallest)
    _, verdict = kill_test(broken, smallest, small_site)
    assert verdict.missing_records >= 1


def test_explore_names_the_crash_points_that_lose_a_record(small_site):
    broken = design_named("zoo-done-before-record")
    points = [AtLine(path, line, 2) for path, line in commit_path_lines(broken)]
    exploration = explore(broken, small_site, SETTINGS, points=points)
    lost = [o.point for o in exploration.broken if any(p.startswith("lost") for p in o.problems)]
    assert lost, [o.point for o in exploration.outcomes]
    assert all(o.point.startswith("l:scrapers/zoo/done_before_record.py:") for o in exploration.broken)
