"""A real browser crawler built on a framework, at killtest's defaults: a Crawlee 3.18.1 PlaywrightCrawler
(tests/scraper_fixtures/crawlee_playwright/, written from Crawlee's docs; Debian's Chromium; the default
Dataset and request queue on file-system storage, CRAWLEE_PURGE_ON_START=false) run by `killtest run` on a
2 x 5 shop, as a user would, with only --runs 1.

What must hold, whatever the machine's pace: its pace is measured first (a browser crawler's start-up is
seconds, not the article's 0.2 s), so a kill lands at work; and nothing is reported lost unless the crawl
finished (a crawl the time limit cut short has records it had not stored yet, not lost ones).

Crawlee keeps a killed start's requests locked in their files (requestLockSecs, 180 s for the default
queue; prolongRequestLock adds it to the lock already there, so up to about 360 s for a request in flight),
and the next start waits them out. So that the test runs in a minute or two, the crawler takes the default
queue's requestLockSecs from CRAWLEE_TEST_REQUEST_LOCK_SECS (a public property of Crawlee's RequestQueue;
its documented route, requestHandlerTimeoutSecs with a queue given to the crawler, never goes below 60 s).

Needs /usr/bin/chromium, node and npm, and the npm registry: crawlee and playwright are installed once at
the pinned releases into ~/.cache/killtest/cases/ as `killtest cases` installs a case's framework (no
browser download). Skipped when they are missing, unless KILLTEST_REQUIRE_BROWSER=1, as the other browser
tests (tests/test_browser_processes.py).
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from killtest.harness.campaigns.case_envs import ensure_env
from killtest.harness.design.model import PROJECT_ROOT
from killtest.harness.errors import KilltestError
from tests.conftest import browser_required

PACKAGES = ("crawlee@3.18.1", "playwright@1.65.2")
DESIGN = os.path.join(PROJECT_ROOT, "tests", "scraper_fixtures", "crawlee_playwright", "design.toml")
CHROMIUM = "/usr/bin/chromium"
LOCK_S = "3"


@pytest.fixture(scope="module")
def crawlee_env():
    if not os.access(CHROMIUM, os.X_OK):
        browser_required(f"{CHROMIUM} is missing (apt-get install chromium)")
    if shutil.which("npm") is None:
        browser_required("npm is missing (apt-get install npm)")
    try:
        return ensure_env("node", PACKAGES, say=lambda _: None)
    except KilltestError as failed:
        browser_required(f"cannot install {' '.join(PACKAGES)}: {failed}")


@pytest.mark.slow  # minutes in a fresh-clone CI (its env built beside): the heaviest first
def test_a_crawlee_playwright_crawler_at_the_defaults_is_killed_at_work_and_never_falsely_loses(crawlee_env,
                                                                                                 tmp_path):
    env = crawlee_env.environ({**os.environ, "CRAWLEE_TEST_REQUEST_LOCK_SECS": LOCK_S})
    done = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", DESIGN, "--listing-pages", "2",
                           "--per-page", "5", "--runs", "1", "--out", str(tmp_path), "--no-plot"],
                          capture_output=True, text=True, env=env, timeout=1200, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads((tmp_path / "killtest.json").read_text())
    measured = report["settings"]["measured_pace"]
    assert measured is not None and measured["startup_s"] > 0 and measured["crawl_s"] >= measured["startup_s"]
    assert f"pin them: {measured['pin']}" in done.stderr  # said on the terminal, with the options that pin it
    # Every kill counts from its start's own first request (`f` points), waited for past the measured start-up.
    assert measured["pin"].startswith("--kill-delay f") and measured["first_request_wait_s"] > measured["startup_s"]
    run = report["runs"][0]
    assert run["kills"] >= 1, done.stderr  # a kill landed at work
    # No false loss: a record counts as lost only when the crawl finished.
    if run["outcome"] != "completed":
        assert run["missing_records"] == 0 and "lost" not in run["findings"], run["problems"]
        assert run["not_stored_unfinished"] == run["categories"]["not_stored_unfinished"]["count"]
    assert run["correct_records"] + run["missing_records"] + run["not_stored_unfinished"] \
        + run["wrong_records"] == 10
