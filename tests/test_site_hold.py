"""Time a start spends waiting on the site's own slow answer is not time without progress
(harness/running/start_watch.py, fixture_site/request_log.py RequestLog.holding).

Real processes and a real site: the start's one request is for a page the site holds on purpose (`slow_paths`,
as `--slow-page` sets it), and the start prints nothing, stores nothing and asks for nothing else meanwhile.
"""

import sys

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness.design.model import Design, StoreSpec
from killtest.harness.faults.schedule import KillSchedule, parse_schedule
from killtest.harness.running.runner import RunSettings, run_kill_test

# One request for argv[2] (the site's base URL + path), then an empty store: a start that only waits on it.
FETCH_ONCE = """
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip("/") + sys.argv[2], timeout=120).read()
open(sys.argv[3], "a").close()
"""
# The first start asks for the slow page (and is killed at that request); every later start hangs, asking nothing.
FIRST_FETCHES_THEN_HANGS = """
import os, sys, time, urllib.request
marker = sys.argv[3] + ".began"
if os.path.exists(marker):
    time.sleep(600)
open(marker, "w").close()
urllib.request.urlopen(sys.argv[1].rstrip("/") + sys.argv[2], timeout=120).read()
"""
CATALOG = build_catalog(listing_pages=1, products_per_page=2, seed=1)


def a_design(code: str) -> Design:
    return Design(name="slow-site", store=StoreSpec(kind="jsonl", path="{work_dir}/r.jsonl"),
                  command_template=(sys.executable, "-c", code, "{base_url}", "/product/1", "{work_dir}/r.jsonl"))


def test_a_start_waiting_on_a_page_the_site_holds_is_not_stopped_for_making_no_progress(tmp_path):
    """The site holds the answer 2.5 s; no_progress_s is 0.8. Before, the watch stopped the start after 0.8 s
    of that wait (so a case with a 10 s slow page needed a timeout over 10 s, which a hung start was given too)."""
    with SiteServer(CATALOG, slow_paths={"/product/1": 2.5}) as site:
        history = run_kill_test(a_design(FETCH_ONCE), KillSchedule(seed=None, points=()), site, str(tmp_path),
                                RunSettings(no_progress_s=0.8, time_limit_s=60))
    assert history.of_type("time_limit") == []
    assert [e["returncode"] for e in history.of_type("process_exited")] == [0]


def test_a_killed_starts_request_still_held_by_the_site_does_not_keep_the_next_start_from_being_stopped(tmp_path):
    """Start 1 is killed as its request for the slow page arrives; the site goes on holding that request 30 s,
    through the door of a dead start. Start 2 hangs: it is stopped after no_progress_s, not after the hold."""
    with SiteServer(CATALOG, slow_paths={"/product/1": 30.0}) as site:
        history = run_kill_test(a_design(FIRST_FETCHES_THEN_HANGS), parse_schedule("r1"), site, str(tmp_path),
                                RunSettings(no_progress_s=0.8, time_limit_s=120))
        doors = [start["door"] for start in history.of_type("process_started")]
        held = [site.request_log.held_until(door) for door in doors]
    assert held[0] is not None and held[1] is None  # the dead start's request was held, none of the hung one's
    kills, starts = history.of_type("kill"), history.of_type("process_started")
    assert [k["point"] for k in kills] == ["r1"] and len(starts) == 2
    stopped = history.first("time_limit")
    assert stopped is not None and stopped["start"] == 1 and stopped["no_progress_s"] >= 0.8
    # Stopped long before the dead start's 30 s hold ended (the watch subtracts any wait for a CPU, so on a loaded
    # machine it may come later than 0.8 s, but no wait makes it outlast a hold it must not count).
    assert stopped["t"] - starts[1]["t"] < 25, (stopped, starts[1])


# One request for the slow page, waited out, then a hang: no request, output or store change ever again.
FETCHES_THEN_HANGS = """
import sys, time, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip("/") + sys.argv[2], timeout=120).read()
time.sleep(600)
"""
# One request for the slow page, given up on after 0.5 s (the client closes its connection), then a hang.
GIVES_UP_THEN_HANGS = """
import sys, time, urllib.request
try:
    urllib.request.urlopen(sys.argv[1].rstrip("/") + sys.argv[2], timeout=0.5).read()
except OSError:
    pass
time.sleep(600)
"""


def stopped_after(code: str, slow_s: float, tmp_path) -> float:
    """Seconds from the start's spawn to its stop for making no progress (no_progress_s 0.8, time limit 60 s)."""
    with SiteServer(CATALOG, slow_paths={"/product/1": slow_s}) as site:
        history = run_kill_test(a_design(code), KillSchedule(seed=None, points=()), site, str(tmp_path),
                                RunSettings(no_progress_s=0.8, time_limit_s=60))
    stopped = history.first("time_limit")
    assert stopped is not None and stopped.get("no_progress_s", 0) >= 0.8, stopped  # stopped as stuck, not timed out
    return stopped["t"] - history.first("process_started")["t"]


def test_a_start_that_hangs_after_the_site_answered_its_slow_page_is_stopped_once_the_hold_is_over(tmp_path):
    """The hold ends (its seconds counted once): the start is stuck from then on, stopped 0.8 s of idleness later,
    never held off until the time limit."""
    assert 1.5 <= stopped_after(FETCHES_THEN_HANGS, 1.5, tmp_path) < 45


def test_a_start_that_gave_up_on_a_slow_page_and_hangs_is_not_shielded_by_the_hold_it_left(tmp_path):
    """The client closed its connection after 0.5 s; the site goes on holding the page 30 s, but nobody waits
    for it: the start is stopped long before (a loaded machine may be late: the watch does not count its waits
    for a CPU as idleness, but nothing makes it outlast the hold)."""
    assert stopped_after(GIVES_UP_THEN_HANGS, 30.0, tmp_path) < 25
