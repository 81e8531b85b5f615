"""End to end: a crawl the time limit cuts short loses nothing. What it had not stored is reported as not stored
because the crawl did not finish (liveness, with the count), in the verdict, the JSON, the Markdown, the
terminal and the public API the pytest plugin calls; and the stopped start's own last words are quoted."""

import io
import json

import killtest
from killtest.harness.history import History

# The final start waits 30 s on product 4 while the limit is 20 s: the crawl is cut short, whatever the machine.
# (6 s was too short for a starved machine to boot two starts and reach the kill at r2 before the cut.)
CUT = {"listing_pages": 2, "per_page": 3, "runs": 1, "lease": 0.5, "time_limit": 20.0,
       "slow_page": ["/product/4=30"], "no_progress_timeout": 60.0}


def test_a_crawl_cut_by_the_time_limit_reports_not_stored_never_lost(tmp_path):
    log = io.StringIO()
    result = killtest.run("idempotent", schedule="r2", out=tmp_path, log=log, **CUT)
    codes = [finding.promise for finding in result.findings]
    assert "no_lost_records" not in codes and "finishes" in codes, result.report()
    report = json.loads((tmp_path / "killtest.json").read_text())
    run = report["runs"][0]
    assert run["findings"] == ["liveness"] and run["missing_records"] == 0
    assert run["not_stored_unfinished"] >= 1
    assert report["summary"]["idempotent"]["lost"] == 0
    said = f"{run['not_stored_unfinished']} of 6 records not stored because the crawl did not finish"
    assert said in run["problems"][0]
    markdown = (tmp_path / "killtest.md").read_text()
    assert said in markdown and "lost 1" not in markdown and "What the starts said" in markdown
    # The stopped start is quoted: its pace, and what it wrote (the idempotent design prints its events).
    stopped = [s for s in run["stalled_starts"] if s["ended_by"] == "time_limit"]
    assert len(stopped) == 1 and stopped[0]["startup_s"] is not None
    assert stopped[0]["quiet_at_end_s"] > 0 and "its last words:" in log.getvalue()
    history = History.read_jsonl(next((tmp_path / "history").glob("*.jsonl")))
    assert sorted(e["start"] for e in history.of_type("start_output")) == \
        sorted(e["start"] for e in history.of_type("process_started"))
