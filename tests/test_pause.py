"""The pause nemesis (`p<when>:<seconds>[@worker]`: SIGSTOP, then SIGCONT) and the zombie writers it exposes."""

from __future__ import annotations

import re
import shlex
import threading
import time

import psutil
import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness.check.checker import check_run
from killtest.harness.check.verdict import RunVerdict
from killtest.harness.check.zombies import (
    ZombieWrite,
    fetched_twice_not_by_a_pause,
    pauses_landed,
    put_backs,
    refetches_by_woken_workers,
    zombie_writes,
)
from killtest.harness.cli import build_parser
from killtest.harness.defaults import ZOO_LISTING_PAGES, ZOO_PER_PAGE
from killtest.harness.design.registry import design_named
from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import parse_point
from killtest.harness.faults.points.pause import Pause
from killtest.harness.faults.schedule import parse_schedule, validate_schedule
from killtest.harness.faults.zoo_scenarios import zoo_entries
from killtest.harness.history import History
from killtest.harness.report.timeline import pauses, plot_timeline
from killtest.harness.running.prefork import Zygote
from killtest.harness.running.runner import RunSettings, run_kill_test
from tests.conftest import children_left

CATALOG = build_catalog(listing_pages=2, products_per_page=3, seed=1)  # 6 products, 8 requests
UNFENCED = next(e for e in zoo_entries() if e.design.name == "zoo-unfenced-lease")


# Parsing, printing, replaying.

@pytest.mark.parametrize("text, point", [
    ("p0.4:3", Pause(0.4, 3.0)),
    ("p0.2:4@1", Pause(0.2, 4.0, 1)),
    ("p1.5:0.25@2", Pause(1.5, 0.25, 2)),
])
def test_a_pause_point_parses_and_prints_back_to_its_own_text(text, point):
    assert parse_point(text) == point
    assert point.spec == text
    assert parse_point(point.spec) == point


def test_pauses_combine_with_every_other_kind_and_the_schedule_replays_from_its_line():
    line = "t0.4,p0.2:4@1,r30,d0.3:0.05@2,p0.1:0.5,r5+,s0.5"
    schedule = parse_schedule(line)
    assert [type(p).__name__ for p in schedule.points] == ["AfterDelay", "Pause", "AtRequest", "Redeploy", "Pause",
                                                           "AtRequest", "ServerRestart"]
    assert schedule.spec == line and parse_schedule(schedule.spec) == schedule


@pytest.mark.parametrize("bad", ["p0.4", "p:3", "p0:3", "p0.4:0", "p0.4:-1", "p0.4:3@0", "p0.4:3@x", "p0.4:3:1"])
def test_a_malformed_pause_is_one_line_naming_the_pause_form(bad):
    with pytest.raises(KilltestError, match=r"p<seconds>:<paused seconds>") as raised:
        parse_point(bad)
    assert "\n" not in str(raised.value)


def test_a_pause_of_a_worker_the_start_does_not_have_is_refused_before_anything_runs():
    with pytest.raises(KilltestError, match="names worker 2, but each start has 1; give --workers 2"):
        validate_schedule(parse_schedule("p0.4:3@2"), [design_named("idempotent")], workers=1)
    validate_schedule(parse_schedule("p0.4:3@2"), [design_named("idempotent")], workers=2)


def test_the_zoo_replay_line_of_the_pause_scenario_parses_back_to_the_same_settings():
    words = shlex.split(UNFENCED.scenario.replay_command(UNFENCED.design.name))
    args = build_parser().parse_args(words[1:])
    assert args.schedule == "p1.9:4.5@1" and args.workers == 2 and args.lease == 2.0
    assert parse_schedule(args.schedule).points == (Pause(1.9, 4.5, 1),)
    assert args.slow_page == [f"/product/{i}=1" for i in range(6)]


# A real run: worker 1 is stopped (state T) and continued; the other worker never stops.

@pytest.mark.fault("p")
def test_a_paused_worker_is_stopped_for_its_seconds_then_resumed_and_the_start_goes_on(tmp_path):
    design = design_named("idempotent")
    stopped: dict[int, list[float]] = {}  # pid -> when psutil saw it stopped ('T')
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for child in psutil.Process().children(recursive=True):
                try:
                    seen.add(child.pid)
                    if child.status() == psutil.STATUS_STOPPED:
                        stopped.setdefault(child.pid, []).append(time.monotonic())
                except psutil.Error:
                    pass
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    # 40 requests a second: the 8-request crawl outlasts the pause's start (0.3 s) by far.
    with SiteServer(CATALOG, pace_rps=40, slow_paths={"/product/1": 0.8}) as site:
        watcher.start()
        try:
            history = run_kill_test(design, parse_schedule("p0.3:1.5@1"), site, str(tmp_path),
                                    RunSettings(lease_s=30.0, workers=2, time_limit_s=60))
        finally:
            done.set()
            watcher.join()
    [started] = history.of_type("process_started")
    [paused], [resumed] = history.of_type("paused"), history.of_type("resumed")
    first, second = started["pids"]
    assert paused["pids"] == resumed["pids"] == [first] and paused["worker"] == 1 and paused["seconds"] == 1.5
    # Lower bounds only: how late the harness resumes it is the machine's load (make test's background starves
    # it), and the 30 s lease keeps a late resume from turning the pause into a takeover.
    assert resumed["t"] - paused["t"] >= 1.5 and resumed["seconds"] >= 1.5
    assert list(stopped) == [first], (stopped, seen)  # only worker 1, and psutil saw it in state T
    assert stopped[first][-1] - stopped[first][0] >= 1.2
    assert history.of_type("kill") == [] and history.of_type("process_exited")  # a pause killed nothing
    verdict = check_run(design, 1, history, site.catalog)
    # A pause shorter than the lease gave no other worker the page: every promise kept, but it proved
    # nothing about a takeover, so the run is unknown, never a PASS (check/zombies.py pauses_past_the_lease).
    assert verdict.validity == "unknown" and verdict.findings == ["no_kill_landed"], verdict.problems
    assert verdict.rows == verdict.correct_records == len(CATALOG.products)
    assert [span[2] for span in pauses(history)] == ["start 1, worker 1"]
    plot_timeline(history, str(tmp_path / "timeline.png"), "a pause")
    assert (tmp_path / "timeline.png").stat().st_size > 0
    assert children_left() == []


# The checker on a hand-built history: worker A is paused past its lease, B takes the page over.

def zombie_history(commit_t: float = 4.02, b_claims: bool = True) -> History:
    h = History()
    paths = ["/list/0", *[p.path for p in CATALOG.products[:3]], "/list/1", *[p.path for p in CATALOG.products[3:]]]
    h.add("run_started", 0.0, design="x", seed=None, kill_points=["p1:3@1"], lease_s=1.0, time_limit_s=20,
          products=len(CATALOG.products), full_crawl_requests=CATALOG.full_crawl_requests, workers=2)
    h.add("process_started", 0.1, start=0, pid=11, pids=[11, 12], crawl=1)
    t = 0.2
    for path in paths:
        a_holds = path == "/product/2"
        pid = 11 if a_holds else 12
        h.add("scraper_event", t, start=0, name="claimed", path=path, lease_s=1.0, pid=pid)
        h.add("request", t + 0.01, path=path, status=200, start=0)
        if not a_holds:
            h.add("scraper_event", t + 0.02, start=0, name="committed", path=path, pid=pid)
        t += 0.1
    h.add("paused", 1.0, start=0, worker=1, pids=[11], seconds=3.0, point="p1:3@1")
    if b_claims:  # A's lease ran out at 1.5 s: B claims /product/2, fetches it again and commits
        h.add("scraper_event", 2.0, start=0, name="claimed", path="/product/2", lease_s=1.0, pid=12)
        h.add("request", 2.01, path="/product/2", status=200, start=0)
        h.add("scraper_event", 2.02, start=0, name="committed", path="/product/2", pid=12)
    h.add("resumed", 4.0, start=0, worker=1, pids=[11], seconds=3.0, point="p1:3@1")
    h.add("scraper_event", commit_t, start=0, name="committed", path="/product/2", pid=11)
    h.add("process_exited", 4.1, start=0, returncode=0, held_leases=[])
    h.add("run_finished", 4.2, outcome="completed", wall_s=4.2)
    for product in CATALOG.products:
        h.add("store_record", 4.2, key=product.sku, fields={"price": product.price}, stamped=False)
    return h.sorted()


def test_a_commit_after_the_lease_ran_out_and_another_worker_claimed_the_page_is_a_zombie_write():
    h = zombie_history()
    assert zombie_writes(h) == [ZombieWrite("/product/2", "start 1 pid 11", 0.5, 1.5, 4.02, "start 1 pid 12", 2.0,
                                            overwrote=True)]
    verdict = check_run(design_named("idempotent"), 1, h, CATALOG)
    assert verdict.findings == ["zombie_write"], verdict.problems
    assert verdict.validity == "invalid"
    assert verdict.problems == [
        "1 zombie writes (/product/2): committed after the writer's lease ran out and another worker claimed the"
        " page; start 1 pid 11 claimed /product/2 at 0.500s, its lease ran out at 1.500s, start 1 pid 12 claimed"
        " it at 2.000s, and start 1 pid 11 still committed at 4.020s; 1 of them wrote over the new holder's commit"
        " (broke fenced_writes)"]
    # The takeover's fetch is the pause's cost, not a page fetched twice for nothing: 9 requests are allowed.
    assert verdict.requests == 9 and fetched_twice_not_by_a_pause(h) == []


def test_no_zombie_without_a_takeover_or_within_the_lease():
    assert zombie_writes(zombie_history(b_claims=False)) == []  # the lease ran out, but nobody took the page
    assert zombie_writes(zombie_history(commit_t=1.3)) == []  # committed while the lease still held
    verdict = check_run(design_named("idempotent"), 1, zombie_history(b_claims=False), CATALOG)
    assert verdict.validity == "valid", verdict.problems


def test_a_waived_fenced_writes_promise_drops_the_finding():
    from dataclasses import replace

    from killtest.harness.promises import Promise
    design = replace(design_named("idempotent"), does_not_promise=frozenset({Promise.FENCED_WRITES}))
    assert check_run(design, 1, zombie_history(), CATALOG).validity == "valid"


# Real runs of the zoo pair on the unfenced design's scenario: a pause past the lease with two workers.

def zoo_scenario_run(design_name: str, tmp_path) -> tuple[History, RunVerdict]:
    """One run of the scenario, its start forked from a process that imported the design already.

    The schedule pauses worker 1 at 1.9 s, counted from the spawn, and assumes it is then in the middle
    of a product page: true for a start-up of 0.2 to 0.8 s. A new interpreter's start-up on a loaded
    machine reached 1.87 s (first claim at 1.87 s): the pause then caught worker 1 between two pages,
    holding none, and no zombie write could happen (1 failure in 14-16 runs). A pre-forked start is up in
    0.06-0.14 s whatever the load, as explore's and fuzz's are."""
    scenario = UNFENCED.scenario
    design = design_named(design_name)
    catalog = build_catalog(ZOO_LISTING_PAGES, ZOO_PER_PAGE)
    with SiteServer(catalog, slow_paths=dict(scenario.slow_pages)) as site, Zygote(design) as launcher:
        history = run_kill_test(design, parse_schedule(scenario.schedule), site, str(tmp_path),
                                RunSettings(lease_s=scenario.lease_s, time_limit_s=scenario.time_limit_s,
                                            workers=scenario.workers), launcher=launcher)
    return history, check_run(design, 1, history, catalog)


def lease_events(history: History) -> list[tuple]:
    """What a failing assertion shows: who claimed, committed or was fenced out, and the pause."""
    return [(e["t"], e.get("name", e["type"]), e.get("path"), e.get("pid", e.get("pids")))
            for e in history.events if e["type"] in ("paused", "resumed") or e.get("name") in ("claimed", "committed",
                                                                                              "fenced")]


@pytest.mark.slow
@pytest.mark.serial  # the zoo's scenario, which test_zoo runs in the serial step too: a pause at 1.9 s on a clock
def test_the_unfenced_design_writes_as_a_zombie_the_same_way_on_every_repeat(tmp_path):
    outcomes = []
    for repeat in (1, 2):
        work = tmp_path / f"repeat{repeat}"
        work.mkdir()
        history, verdict = zoo_scenario_run("zoo-unfenced-lease", work)
        zombies = zombie_writes(history)
        outcomes.append((verdict.findings, len(zombies), [z.overwrote for z in zombies], verdict.rows))
        [paused] = history.of_type("paused")
        assert {z.writer for z in zombies} == {f"start 1 pid {paused['pids'][0]}"}, lease_events(history)
    assert outcomes[0] == outcomes[1] == (["zombie_write"], 1, [True], len(CATALOG.products)), outcomes


@pytest.mark.slow
@pytest.mark.serial  # as above
def test_the_fenced_design_refuses_the_zombie_commit_and_comes_out_clean(tmp_path):
    history, verdict = zoo_scenario_run("fenced-lease", tmp_path)
    assert verdict.validity == "valid" and verdict.findings == [], verdict.problems
    assert verdict.rows == verdict.correct_records == len(CATALOG.products)
    [paused] = history.of_type("paused")
    fenced = [e for e in history.of_type("scraper_event") if e["name"] == "fenced"]
    # The woken worker tried to commit the page it held and was refused: its token was no longer current.
    assert [e["pid"] for e in fenced] == paused["pids"] and fenced[0]["t"] > paused["t"], lease_events(history)
    assert zombie_writes(history) == []


def test_an_old_value_written_after_a_fetch_that_saw_the_change_is_a_put_back():
    sku, path = CATALOG.products[2].sku, CATALOG.products[2].path
    h = History()
    h.add("run_started", 0.0, design="x", seed=None, kill_points=["p1:3@1"], lease_s=1.0, time_limit_s=20,
          products=6, full_crawl_requests=8, workers=2)
    h.add("request", 0.9, path=path, status=200, start=0)  # worker A: the old price, then paused
    h.add("catalog_changed", 1.5, version=1, changed=[sku], removed=[], added=[], products=6, full_crawl_requests=8)
    h.add("request", 2.0, path=path, status=200, start=0)  # worker B sees the new price and commits it

    def stored(last_write: float) -> History:
        done = History(list(h.events))
        done.add("store_record", 2.01, key=sku, fields={"price": "1.00"}, stamped=True, changed_t=last_write)
        return done

    assert put_backs(stored(4.02), [sku], {sku: path}) == [sku]  # A woke and wrote the old price over it
    assert put_backs(stored(1.0), [sku], {sku: path}) == []  # stale, but written before anyone saw the change
    assert put_backs(stored(4.02), [], {sku: path}) == []  # not stale: the store holds what the site shows


def test_the_woken_workers_first_fetch_of_a_page_stored_meanwhile_is_excused_once():
    sku, path = CATALOG.products[2].sku, CATALOG.products[2].path
    other_sku, other_path = CATALOG.products[3].sku, CATALOG.products[3].path
    h = History()
    h.add("run_started", 0.0, design="x", seed=None, kill_points=["p1:3@1"], lease_s=1.0, time_limit_s=20,
          products=6, full_crawl_requests=8, workers=2)
    h.add("request", 0.5, path=CATALOG.products[0].path, status=200, start=0)  # the start is at work
    h.add("paused", 1.0, start=0, worker=1, pids=[11], seconds=3.0)
    h.add("request", 2.0, path=path, status=200, start=0)  # B takes the page over and stores it at 2.01
    h.add("request", 2.1, path=other_path, status=200, start=0)
    h.add("resumed", 4.0, start=0, worker=1, pids=[11], seconds=3.0)
    h.add("request", 4.01, path=path, status=200, start=0)  # A wakes and sends the fetch it was about to make
    h.add("request", 4.5, path=other_path, status=200, start=0)  # a second refetch: not the pause's
    h.add("store_record", 2.01, key=sku, fields={}, stamped=True, changed_t=2.01)
    h.add("store_record", 2.11, key=other_sku, fields={}, stamped=True, changed_t=2.11)
    assert refetches_by_woken_workers(h.sorted(), {sku: path, other_sku: other_path}) == {path}


def test_only_a_pause_of_one_worker_of_several_past_the_lease_counts_as_a_fault_that_landed():
    """A pause that gave nobody the chance to take a page over proves nothing: a run with no other fault is
    unknown, never a PASS (a broken design paused for 0.1 s must not pass)."""
    def history(workers: int, worker: int | None, seconds: float) -> History:
        h = History()
        h.add("run_started", 0.0, design="x", seed=None, kill_points=["p"], lease_s=1.0, time_limit_s=20,
              products=6, full_crawl_requests=8, workers=workers)
        h.add("request", 0.5, path=CATALOG.products[0].path, status=200, start=0)
        h.add("paused", 1.0, start=0, worker=worker, pids=[11], seconds=seconds)
        h.add("resumed", 1.0 + seconds, start=0, worker=worker, pids=[11], seconds=seconds)
        return h

    assert pauses_landed(history(2, 1, 3.0)) == 1
    assert pauses_landed(history(1, 1, 3.0)) == 0  # nobody else to take the page over
    assert pauses_landed(history(2, None, 3.0)) == 0  # every worker stopped at once
    assert pauses_landed(history(2, 1, 0.5)) == 0  # shorter than the lease


def test_a_point_set_up_when_its_start_is_spawned_is_refused_after_a_pause():
    """After a pause the start goes on, so a line, store-write or r5+ point would never be set up: one line,
    never a run that silently does not fire it."""
    design = design_named("idempotent")
    for late in ("l:scrapers/idempotent.py:complete+8:2", "w5", "r5+"):
        with pytest.raises(KilltestError, match=f"kill point {re.escape(late)} needs a start of its own"):
            validate_schedule(parse_schedule(f"p0.2:3,{late}", design), [design], workers=1)
    validate_schedule(parse_schedule("w5,p0.2:3,r9", design), [design], workers=1)  # first, or a plain request: fine
    with pytest.raises(KilltestError, match="needs a start of its own"):
        validate_schedule(parse_schedule("t0.2@1,l:scrapers/idempotent.py:complete+8:2", design), [design],
                          workers=2)  # one worker restarted alone: the start goes on
