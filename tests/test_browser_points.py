"""A real browser crawl explored (issue 33): headless Chromium asks for /favicon.ico after every navigation, and
those requests once took request points' numbers (`r2` was the icon, labelled as a page), so half the points
repeated and the last pages were never reached. Now `r1`..`rN` are the crawl's N pages, each once, and the
coverage says so, with the store's writes.

The Playwright for Python case (scrapers/cases/playwright-python-shop), its env built as `killtest cases` builds
it (pip, no browser download: Debian's /usr/bin/chromium), explored on the real shop. Skipped without Chromium
or the registries, unless KILLTEST_REQUIRE_BROWSER=1. About 2 minutes on two shared cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import tomllib

from killtest.harness.campaigns.case_envs import ensure_env
from killtest.harness.design.model import PROJECT_ROOT
from killtest.harness.errors import KilltestError
from tests.conftest import browser_required

CASE = os.path.join(PROJECT_ROOT, "scrapers", "cases", "playwright-python-shop")
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def playwright_env():
    if not os.access(CHROMIUM, os.X_OK):
        browser_required(f"{CHROMIUM} is missing (apt-get install chromium)")
    with open(os.path.join(CASE, "case.toml"), "rb") as spec:
        packages = tuple(tomllib.load(spec)["release"][0]["packages"])
    try:
        return ensure_env("python", packages, say=lambda _: None)
    except KilltestError as failed:
        browser_required(f"cannot build the Playwright case's env: {failed}")


@pytest.mark.slow
def test_a_browser_crawls_request_points_are_its_pages_and_its_coverage_lists_pages_and_writes(playwright_env,
                                                                                              tmp_path):
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", os.path.join(CASE, "design.toml"),
                           "--listing-pages", "1", "--per-page", "1", "--jobs", "1", "--time-limit", "180",
                           "--out", str(out)],
                          cwd=PROJECT_ROOT, env=playwright_env.environ(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads((out / "explore-playwright-python-shop.json").read_text())
    requests = [o for o in found["outcomes"] if o["point"].startswith("r")]
    # One point per page of the crawl (1 listing page, 1 product: the icon follows each), each landing on its own
    # page, never on the icon.
    assert [o["point"] for o in requests] == ["r1", "r2"]
    assert all(o["landed"] for o in requests)
    assert [o["page"] for o in requests] == ["/list/0", "/product/0"]
    assert not any("favicon" in o["where"] for o in found["outcomes"])
    coverage = found["coverage"]
    assert coverage["pages_asked"] == 2
    assert coverage["pages_killed_at"] == ["/list/0", "/product/0"]
    # Each write offered before and after it (its after twin, aw<n>).
    assert coverage["writes"] == [{"file": "records.jsonl", "seen": 1, "points": 1, "after_points": 1, "left_out": 0}]
    assert coverage["left_out"] == []
    assert ("coverage: killed at 2 distinct pages of the 2 a crawl asks for (/list/0, /product/0)"
            in done.stderr)
    assert "store writes to records.jsonl: 1 seen, 1 explored" in done.stderr
