"""No false loss: a record a crawl had not stored when the time limit or a no-progress stop ended it is
"not stored because the crawl did not finish" (a liveness finding with the count), never `lost`; `lost`
is for a crawl that finished. And a stopped or stalled start's own last words, and how long it went
without a request, are in the verdict. Hand-made histories, as every checker test."""

import json

from killtest.harness.check.checker import check_run
from killtest.harness.check.liveness import start_paces
from killtest.harness.history import History
from killtest.harness.report.campaign import Campaign, summarise
from tests.test_checker import CATALOG, IDEMPOTENT, KILLED_TWICE, check, history, truth

LOCKED = "INFO  PlaywrightCrawler: Queue head still returned requests that need to be processed (or that are locked"


def stopped(no_progress_s=None, said=()):
    """Killed twice, then a last start that fetched three pages and was stopped; what it said on stderr."""
    h = history(KILLED_TWICE, outcome="timed_out")
    last = max(e["start"] for e in h.of_type("process_started"))
    for e in list(h.events):  # the last start fetched only its first three pages
        if e["type"] == "request" and e["start"] == last and e["path"] not in ("/list/1", *_first_three(h, last)):
            h.events.remove(e)
    end = h.first("run_finished")["t"]
    h.add("time_limit", end + 60.0, start=last, returncode=-9, held_leases=[],
          **({"no_progress_s": no_progress_s} if no_progress_s is not None else {}))
    h.first("run_finished")["t"] = end + 60.01
    h.add("start_output", end + 60.0, start=last, stderr_tail=list(said), stdout_tail=[])
    return h


def _first_three(h, start):
    return [e["path"] for e in h.of_type("request") if e["start"] == start][:3]


def test_records_a_crawl_stopped_by_the_time_limit_had_not_stored_are_not_lost():
    v = check(IDEMPOTENT, stopped(), truth()[:3])
    assert "lost" not in v.findings and v.missing_records == 0
    assert v.findings == ["liveness"]
    assert v.not_stored_unfinished == 3
    assert "the crawl had not finished after the 60s time limit; 3 of 6 records not stored because the crawl did" \
           " not finish (not counted as lost)" in v.problems[0]
    assert v.categories["lost"]["count"] == 0 and v.categories["not_stored_unfinished"]["count"] == 3


def test_a_no_progress_stop_says_not_stored_too():
    v = check(IDEMPOTENT, stopped(no_progress_s=30.0), truth()[:2])
    assert v.findings == ["liveness"] and v.missing_records == 0 and v.not_stored_unfinished == 4
    assert "made no progress" in v.problems[0] and "4 of 6 records not stored" in v.problems[0]


def test_a_store_never_created_by_a_crawl_that_was_stopped_is_not_all_records_missing():
    v = check(IDEMPOTENT, stopped(), [])
    assert v.findings == ["liveness"] and "never created" not in " ".join(v.problems)
    assert v.not_stored_unfinished == len(CATALOG.products)


def test_a_crawl_that_finished_without_a_record_still_lost_it():
    v = check(IDEMPOTENT, history(KILLED_TWICE), truth()[1:])
    assert v.findings[:1] == ["lost"] and v.missing_records == 1 and v.not_stored_unfinished == 0


def test_the_campaign_summary_and_its_json_count_no_loss_for_a_stopped_crawl():
    campaign = Campaign(command="run", settings={}, controls=[])
    campaign.verdicts.append(check(IDEMPOTENT, stopped(), truth()[:3]))
    summary = summarise(campaign)["idempotent"]
    assert summary["lost"] == 0 and summary["not_stored_unfinished"] == 3
    assert json.loads(json.dumps(campaign.verdicts[0].to_json()))["missing_records"] == 0


def test_a_stopped_start_is_quoted_with_its_last_words_and_its_time_without_a_request():
    v = check(IDEMPOTENT, stopped(said=["INFO  PlaywrightCrawler: Starting the crawler.", LOCKED]), truth()[:3])
    last = v.stalled_starts[-1]
    assert last["ended_by"] == "time_limit" and last["stderr_tail"][-1] == LOCKED
    assert last["quiet_at_end_s"] >= 60.0 and last["waiting_s"] >= 60.0  # after its first request: waiting
    assert last["startup_s"] is not None and last["startup_s"] < 1.0  # not its wait: start-up ends at a request


def test_a_start_that_waited_long_after_its_first_request_is_quoted_though_the_crawl_finished():
    h = History()
    h.add("run_started", 0.0, design="x", seed=1, kill_points=["t0.5"], time_limit_s=600, products=6,
          full_crawl_requests=8)
    h.add("process_started", 0.0, start=0, pid=1)
    h.add("request", 0.5, path="/list/0", status=200, start=0)
    h.add("kill", 0.9, start=0, signal="SIGKILL", returncode=-9, held_leases=[])
    h.add("process_started", 1.0, start=1, pid=2)
    h.add("request", 3.0, path="/list/0", status=200, start=1)
    h.add("request", 180.0, path="/list/1", status=200, start=1)  # 177 s waiting out a lock
    h.add("process_exited", 181.0, start=1, returncode=0, held_leases=[])
    h.add("start_output", 181.0, start=1, stderr_tail=[LOCKED], stdout_tail=["done"])
    h.add("run_finished", 181.5, outcome="completed", wall_s=181.5)
    paces = start_paces(h.sorted())
    assert [(p.start, p.startup_s, p.waiting_s, p.ended_by) for p in paces] == [
        (1, 0.5, 0.4, "kill"), (2, 2.0, 177.0, "process_exited")]
    assert paces[1].words() == [f"stderr: {LOCKED}", "stdout: done"]
    v = check_run(IDEMPOTENT, 1, h.sorted(), CATALOG)
    assert [s["start"] for s in v.stalled_starts] == [2]
