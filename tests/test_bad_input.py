"""Bad input is one line and a non-zero exit, and a run that cannot prove anything says so.

`--kills 0` proves nothing; a store that was never created is named as such, not counted as every
record lost; a scraper that makes no progress is stopped early, saying so; no rate per zero records.
"""

import json
import subprocess
import sys
import time

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness.check.checker import check_run
from killtest.harness.design.model import PROJECT_ROOT, Design, StoreSpec
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.running import orchestrator, start_watch
from killtest.harness.running.runner import RunSettings, run_kill_test
from tests.test_checker import IDEMPOTENT, KILLED_TWICE, check, history


def run_killtest(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "killtest", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=PROJECT_ROOT)


def test_a_campaign_without_a_kill_is_refused_in_one_line(tmp_path):
    done = run_killtest("run", "--design", "idempotent", "--kills", "0", "--out", str(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "killtest: error: --kills 0 plans no kill, and a run without a kill proves nothing: give --kills 1 or more,"
        " or a --schedule with at least one kill point"]


def test_a_store_that_was_never_created_is_named_not_counted_as_lost(tmp_path):
    spec = tmp_path / "typo.toml"
    spec.write_text(f'extends = "{PROJECT_ROOT}/scrapers/idempotent.toml"\n[design]\nname = "typo"\n'
                    'args = ["--base", "{base_url}", "--db", "{work_dir}/real.sqlite", "--lease", "{lease_s}"]\n'
                    '[store]\npath = "{work_dir}/idempotant.sqlite"\n')
    done = run_killtest("run", "--design", str(spec), "--runs", "1", "--schedule", "r5", "--listing-pages", "2",
                        "--per-page", "5", "--no-plot", "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("killtest: error:")]
    assert f"{spec}:6: the store " in line and "idempotant.sqlite was never created" in line
    assert "lost" not in line
    # The result files say the campaign stopped, and why; never valid.
    report = json.loads((tmp_path / "out" / "killtest.json").read_text())
    assert report["complete"] is False and report["valid"] is False and report["interrupted"] is False
    assert report["stopped_by"].startswith("KilltestError: ") and "was never created" in report["stopped_by"]


# Marks its crawl done before it fetches anything, then writes its store at the end: killed at its first
# request, the next start finds the crawl marked done and finishes at once, and no store is ever created.
MARKS_DONE_FIRST = """
import json, os, sys, urllib.request
base, work = sys.argv[1], sys.argv[2]
marker = os.path.join(work, "done")
if os.path.exists(marker):
    sys.exit(0)
open(marker, "w").close()
urllib.request.urlopen(base + "/list/0").read()
"""


def test_a_store_a_kill_left_uncreated_is_a_lost_crawl_not_a_spec_mistake(tmp_path):
    """apify 4.0.1 (issue 34): a release that marks a request handled before processing it, killed at its
    first listing page, finishes the next start without a request and without a store. The fault lost the
    crawl: every record lost, as a finding of the run, not `check store.path` ending the exploration."""
    bug = Design(name="marks-done-first", store=StoreSpec(kind="jsonl", path="{work_dir}/r.jsonl"),
                 command_template=(sys.executable, "-c", MARKS_DONE_FIRST, "{base_url}", "{work_dir}"))
    catalog = build_catalog(listing_pages=1, products_per_page=2, seed=1)
    with SiteServer(catalog) as site:
        history = run_kill_test(bug, parse_schedule("r1"), site, str(tmp_path), RunSettings(time_limit_s=60))
    verdict = check_run(bug, 1, history, catalog)
    assert history.of_type("kill") and verdict.outcome == "completed" and "lost" in verdict.findings
    assert any("the store was never created, so all 2 records are missing" in p for p in verdict.problems)


def test_a_scraper_that_makes_no_progress_is_stopped_early_saying_so(tmp_path, monkeypatch):
    monkeypatch.setattr(start_watch, "SAY_EVERY_S", 0.5)
    hung = Design(name="hung", store=StoreSpec(kind="jsonl", path="{work_dir}/r.jsonl"),
                  command_template=(sys.executable, "-c", "import time; time.sleep(60)"))
    said: list[str] = []
    catalog = build_catalog(listing_pages=1, products_per_page=2, seed=1)
    with SiteServer(catalog) as site:
        began = time.monotonic()
        history = run_kill_test(hung, parse_schedule("t0.2"), site, str(tmp_path),
                                RunSettings(no_progress_s=1.5, time_limit_s=60), on_progress=said.append)
        took = time.monotonic() - began
    assert took < 45  # not the 60 s time limit (a tighter bound would be the machine's load)
    verdict = check_run(hung, 1, history, catalog)
    assert verdict.outcome == "timed_out" and "liveness" in verdict.findings
    assert any("made no progress (no request, no output, no store change) for" in p for p in verdict.problems)
    assert any("nothing new for" in line and "stopped after 1.5s of none" in line for line in said)


def test_no_rate_per_record_is_printed_when_no_record_was_stored():
    verdict = check(IDEMPOTENT, history(KILLED_TWICE), [])  # requests served, nothing stored
    assert verdict.requests_per_record is None and verdict.requests > 0
    line = orchestrator._one_line("[x run 1/1]", verdict)
    assert f"requests {verdict.requests}," in line and "/record" not in line
