"""The page and the summary say one thing (issue 33): a count agrees with the table under it, a FAIL says what
failed, the time limit has a mark of its own on the timeline, and a box that says "passed" holds only what passed.

Hand-made histories, judged by the real checker, rendered by the real report; one real `killtest run` for the
terminal's summary of a run no kill landed on.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from types import SimpleNamespace

from killtest.fixture_site.catalog import build_catalog
from killtest.harness.check.checker import check_run
from killtest.harness.design.model import PROJECT_ROOT
from killtest.harness.design.registry import built_in_designs
from killtest.harness.history import History
from killtest.harness.report.campaign import Campaign, to_json, verdict_words
from killtest.harness.report.render import summary_page
from killtest.harness.report.sections import runs_line
from killtest.harness.report.triage_page import exploration_page
from killtest.harness.report.triage_svg import timeline_svg

CATALOG = build_catalog(listing_pages=2, products_per_page=3, seed=1)  # 6 products, 8 requests
IDEMPOTENT = built_in_designs()["idempotent"]
PATHS = ["/list/0", *[p.path for p in CATALOG.products[:3]], "/list/1", *[p.path for p in CATALOG.products[3:]]]


def run_history(kill_before_work: bool = False, stored: int = 6, time_limit: bool = False) -> History:
    """One start killed (at its 2nd request, or before its first), then one that fetches the rest and stores
    `stored` products; with `time_limit` the second start is stopped by the run's time limit instead."""
    h = History()
    h.add("run_started", 0.0, design="idempotent", seed=1, kill_points=["r2"], time_limit_s=60,
          products=len(CATALOG.products), full_crawl_requests=CATALOG.full_crawl_requests)
    h.add("process_started", 0.0, start=0, pid=100)
    t, paths = 0.0, list(PATHS)
    for _ in range(0 if kill_before_work else 2):
        t += 0.1
        h.add("request", t, path=paths.pop(0), status=200, start=0)
    h.add("kill", t + 0.05, start=0, signal="SIGKILL", point="r2", returncode=-signal.SIGKILL, held_leases=[])
    h.add("process_started", t + 0.1, start=1, pid=101)
    t += 0.1
    for path in paths:
        t += 0.1
        h.add("request", t, path=path, status=200, start=1)
    if time_limit:
        h.add("time_limit", t + 0.5, start=1, returncode=-signal.SIGKILL, held_leases=[])
    else:
        h.add("process_exited", t + 0.1, start=1, returncode=0, held_leases=[])
    h.add("run_finished", t + 0.6, outcome="timed_out" if time_limit else "completed", wall_s=round(t + 0.6, 4))
    for product in CATALOG.products[:stored]:
        h.add("store_record", t + 0.6, key=product.sku, fields={"price": product.price, "name": product.name},
              stamped=False)
    return h.sorted()


def campaign_of(*histories: History) -> Campaign:
    verdicts = [check_run(IDEMPOTENT, run, h, CATALOG) for run, h in enumerate(histories, 1)]
    return Campaign(command="killtest run", settings={"health_threshold": 1.25}, verdicts=verdicts, complete=True)


def test_a_run_no_kill_landed_on_fails_the_campaign_and_the_summary_says_so():
    campaign = campaign_of(run_history(kill_before_work=True))
    assert not campaign.valid and campaign.verdicts[0].proved_nothing
    assert runs_line(campaign) == ("1 run, 0 failed, 1 proved nothing (no kill landed on a start at work),"
                                   " 0 distinct failures")
    assert verdict_words(campaign) == "FAIL: 1 run proved nothing (no kill landed on a start at work)"
    assert to_json(campaign)["failed_because"] == ["1 run proved nothing (no kill landed on a start at work)"]


def test_a_page_with_nothing_passed_has_no_passed_box_and_says_why_it_failed():
    campaign = campaign_of(run_history(kill_before_work=True))
    page = summary_page(campaign, "killtest", None, [])
    assert 'class="passing"' not in page and "kept every promise" not in page
    assert '<section class="unproved"><h2>What proved nothing</h2>' in page
    assert "Verdict: <strong>FAIL</strong>: 1 run proved nothing (no kill landed on a start at work)" in page


def test_the_passed_box_holds_the_runs_that_passed_and_only_those():
    campaign = campaign_of(run_history(), run_history(kill_before_work=True))
    page = summary_page(campaign, "killtest", None, [])
    passed = page[page.index('<section class="passing">'):]
    passed = passed[:passed.index("</section>")]
    assert "1 of 2 runs kept every promise: <code>run1</code>" in passed and "run2" not in passed
    assert "proved nothing" not in passed


def test_a_lost_count_over_a_table_of_its_first_keys_says_how_many_more():
    """Six products lost; the verdict keeps five as examples: the table's heading says 6, and 1 more."""
    h = run_history(stored=0)
    campaign = campaign_of(h)
    verdict = campaign.verdicts[0]
    assert verdict.missing_records == 6 and len(verdict.categories["lost"]["examples"]) < 6
    page = summary_page(campaign, "killtest", None, [], history_of=lambda design, run: h)
    assert "lost (on the site, not in the store after a crawl that finished or a start that crashed): 6</th>" in page
    shown = len(verdict.categories["lost"]["examples"])
    assert f"… ({6 - shown} more)" in page


def test_the_time_limit_is_a_mark_of_its_own_not_a_crash():
    h = run_history(stored=2, time_limit=True)
    svg = timeline_svg({"end": 2.0, "events": [[0.0, "start", "start 1"], [1.5, "time_limit", "time limit"]]}, "x")
    assert 'class="time-limit"' in svg and ">time limit</text>" in svg
    crash_lane_y = 6 * 18 + 4 + 2  # the crashes lane's marks (triage_svg.LANES: the 7th lane)
    assert f'y="{crash_lane_y}"' not in svg
    page = summary_page(campaign_of(h), "killtest", None, [], history_of=lambda design, run: h)
    assert 'class="time-limit"' in page


def test_an_exploration_none_of_whose_points_passed_has_no_passed_box():
    outcome = SimpleNamespace(point="r1", valid=False, landed=True, findings=["lost"], problems=["lost 1 of 6"],
                              waived=[], where="on request 1 (/list/0)", place="on a request for /list/", keys={},
                              key_counts={}, timeline={})
    exploration = SimpleNamespace(design="x", strict=False, outcomes=[outcome], elapsed_s=1.0, coverage={})
    page = exploration_page(exploration, "killtest explore", [], lambda broken: "killtest replay", "explore-x")
    assert 'class="passing"' not in page and "none" not in page


def test_a_store_write_kill_that_landed_off_its_aim_is_not_shown_as_a_pass_of_its_point():
    """w7's kill was delivered at another write than the 7th (the start named a file otherwise than the recording
    that aimed it): nothing broke, but w7's own write was never cut, so it is no pass; w8 is."""
    def point(name, off_aim=""):
        return SimpleNamespace(point=name, valid=True, landed=True, findings=[], problems=[], waived=[],
                               where=f"before the {name} write", place="", keys={}, key_counts={}, timeline={},
                               off_aim=off_aim)
    exploration = SimpleNamespace(design="x", strict=False, elapsed_s=1.0, coverage={},
                                  outcomes=[point("w7", "the 3rd write to data-1234.json"), point("w8")])
    page = exploration_page(exploration, "killtest explore", [], lambda broken: "killtest replay", "explore-x")
    assert "1 point kept every promise: <code>w8</code>." in page
    assert ("1 landed off its aim (at another store write than the point names, so its own write was not cut):"
            " <code>w7</code>.") in page


def test_run_prints_what_failed_when_no_run_broke_a_promise(tmp_path):
    """A timed kill after the crawl is done lands nowhere: the run proved nothing, and the FAIL says so."""
    done = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", "idempotent", "--schedule", "t60",
                           "--runs", "1", "--listing-pages", "1", "--per-page", "2", "--no-plot",
                           "--out", str(tmp_path / "out")],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "run: 1 run, 0 failed, 1 proved nothing (no kill landed on a start at work), 0 distinct failures" \
        in done.stderr
    assert "— FAIL: 1 run proved nothing (no kill landed on a start at work)" in done.stderr
