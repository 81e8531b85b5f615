"""Hypothesis fuzzes exact crash points; a failure shrinks to the smallest schedule and prints its replay."""

import contextlib
import tempfile

import pytest
from hypothesis import find, given, note, settings
from hypothesis import strategies as st

from fixture_site.catalog import build_catalog
from fixture_site.server import SiteServer
from harness.check.checker import check_run
from harness.design.registry import design_named
from harness.faults.points.line import AtLine, anchor_for
from harness.faults.points.request import AtRequest
from harness.faults.points.timed import AfterDelay
from harness.faults.schedule import KillSchedule, parse_schedule
from harness.running.exploration import commit_path_lines, explore
from harness.running.orchestrator import Stage
from harness.running.prefork import Zygote
from harness.running.runner import RunSettings, run_kill_test
from harness.servers.for_stores import StoreServers

# The catalog `killtest replay --listing-pages 2 --per-page 3` builds, so a printed replay is exact.
CATALOG = build_catalog(listing_pages=2, products_per_page=3)  # 8 requests for a full crawl
SETTINGS = RunSettings(lease_s=0.2, time_limit_s=60)


@pytest.fixture(scope="module")
def small_site():
    with SiteServer(CATALOG) as server:
        yield server


@pytest.fixture(scope="module")
def launchers():
    """One pre-forked launcher per design: a start costs a fork, not an interpreter and its imports."""
    with contextlib.ExitStack() as stack:
        yield {name: stack.enter_context(Zygote(design_named(name)))
               for name in ("idempotent", "zoo-done-before-record")}


def kill_points(design, full_crawl_requests, exact_only=False):
    """A request (before its answer, or after it unless `exact_only`), a commit-path line, or a short timed kill.

    `r+` and timed points race the scraper, so a failure they find may not repeat; shrinking wants
    exact points only.
    """
    lines = [AtLine(path, line, hit, anchor=anchor_for(path, line))  # printed as function+offset, as explore does
             for path, line in commit_path_lines(design) for hit in (1, 2, 3)]
    before_answer = st.builds(AtRequest, st.integers(1, full_crawl_requests))
    if exact_only:
        return st.one_of(before_answer, st.sampled_from(lines))
    return st.one_of(st.builds(AtRequest, st.integers(1, full_crawl_requests), st.booleans()),
                     st.sampled_from(lines), st.builds(AfterDelay, st.sampled_from([0.01, 0.03, 0.06, 0.1])))


def kill_schedules(design, full_crawl_requests=CATALOG.full_crawl_requests, exact_only=False):
    """One to three kill points."""
    return st.lists(kill_points(design, full_crawl_requests, exact_only), min_size=1, max_size=3).map(
        lambda points: KillSchedule(seed=None, points=tuple(points)))


@st.composite
def catalogs_and_schedules(draw, design):
    """A catalog of 1-3 listing pages of 1-4 products, and a schedule whose request points fit it."""
    catalog = build_catalog(draw(st.integers(1, 3)), draw(st.integers(1, 4)))
    return catalog, draw(kill_schedules(design, catalog.full_crawl_requests))


def kill_test(design, schedule, site, launchers=None):
    with tempfile.TemporaryDirectory(prefix="killtest-fuzz-") as work_dir:
        launcher = launchers[design.name] if launchers else None
        history = run_kill_test(design, schedule, site, work_dir, SETTINGS, launcher=launcher)
    return history, check_run(design, 1, history, site.catalog)


def replay_command(design, schedule, catalog=CATALOG) -> str:
    return (f"killtest replay --design {design.name} --schedule {schedule.spec}"
            f" --listing-pages {catalog.listing_pages} --per-page {catalog.products_per_page}"
            f" --lease {SETTINGS.lease_s:g}")



@given(case=catalogs_and_schedules(design_named("idempotent")))
def test_idempotent_design_keeps_its_promises_at_any_crash_points_on_any_catalog(case, launchers):
    catalog, schedule = case
    note(f"replay: {replay_command(design_named('idempotent'), schedule, catalog)}")
    with SiteServer(catalog) as site:
        _, verdict = kill_test(design_named("idempotent"), schedule, site, launchers)
    assert verdict.rows == verdict.correct_records == len(catalog.products)
    assert verdict.missing_records == 0 and verdict.unexpected_records == 0
    assert verdict.requests <= catalog.full_crawl_requests + verdict.kills
    assert verdict.outcome == "completed"


def test_an_exact_schedule_gives_the_same_outcome_on_every_repeat(small_site, launchers):
    schedule = parse_schedule("r5,l:scrapers/idempotent.py:complete+8:2,r1")
    outcomes = [fingerprint(*kill_test(design_named("idempotent"), schedule, small_site, launchers))
                for _ in range(3)]
    assert outcomes[0] == outcomes[1] == outcomes[2]
    assert [rc for rc, _ in outcomes[0][1]] == [-9, -9, -9]


def fingerprint(history, verdict):
    """What a repeat must reproduce: every request and the start that made it, each kill, the store."""
    return ([(r["start"], r["path"]) for r in history.of_type("request")],
            [(k["returncode"], k["held_leases"]) for k in history.of_type("kill")],
            sorted((r["key"], sorted(r["fields"].items())) for r in history.of_type("store_record")))


def test_a_pre_forked_start_behaves_like_a_new_interpreter(small_site, launchers):
    # Outcomes are exact when no lease runs out while a start boots: here 1.5 s against a 0.2-0.4 s boot.
    long_lease = RunSettings(lease_s=1.5, time_limit_s=60)
    schedule = parse_schedule("r5,l:scrapers/idempotent.py:complete+8:2")
    outcomes = []
    for pool in (None, launchers):
        with tempfile.TemporaryDirectory(prefix="killtest-fuzz-") as work_dir:
            launcher = pool["idempotent"] if pool else None
            history = run_kill_test(design_named("idempotent"), schedule, small_site, work_dir, long_lease,
                                    launcher=launcher)
        outcomes.append(fingerprint(history, None))
    assert outcomes[0] == outcomes[1]


def test_fuzzing_catches_the_design_that_marks_done_before_saving_and_shrinks_to_one_kill(small_site, launchers):
    broken = design_named("zoo-done-before-record")

    def breaks_a_promise(schedule):
        verdict = kill_test(broken, schedule, small_site, launchers)[1]
        return verdict.missing_records > 0 or verdict.rows != len(CATALOG.products) or verdict.wrong_records > 0

    smallest = find(kill_schedules(broken, exact_only=True), breaks_a_promise,
                    settings=settings(max_examples=100, deadline=None, database=None))
    assert smallest.kills == 1, replay_command(broken, smallest)
    _, verdict = kill_test(broken, smallest, small_site)
    assert verdict.missing_records >= 1


def test_explore_names_the_crash_points_that_lose_a_record(small_site, launchers):
    broken = design_named("zoo-done-before-record")
    points = [AtLine(path, line, 2, anchor=anchor_for(path, line)) for path, line in commit_path_lines(broken)]
    with StoreServers([broken]) as servers:  # a SQLite design: no server starts
        exploration = explore(broken, Stage(small_site, servers, {broken.name: launchers[broken.name]}), SETTINGS,
                              points=points)
    lost = [o.point for o in exploration.broken if any(p.startswith("lost") for p in o.problems)]
    assert lost, [o.point for o in exploration.outcomes]
    assert all(o.point.startswith("l:scrapers/zoo/done_before_record.py:complete+") for o in exploration.broken)
