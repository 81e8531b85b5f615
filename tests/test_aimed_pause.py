"""The aimed pause (issue 35): with --aim-pauses a pause stops its worker the moment that worker's next request for
a product reaches the site, so it always holds a page and never a lock, and the page it holds is taken over.

A real run of a half-fenced design (tests/scraper_fixtures/half_fenced.toml: fenced done mark, unfenced record
upsert), two workers, the issue's schedule; the history says where the stop landed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HALF_FENCED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scraper_fixtures", "half_fenced.toml")


@pytest.mark.serial  # a pause of seconds past a 1 s lease: run beside one other test at most
def test_an_aimed_pause_stops_its_worker_at_its_own_product_request_and_the_zombie_shows(tmp_path):
    out = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", HALF_FENCED, "--workers", "2",
                           "--schedule", "p1:3@1", "--lease", "1", "--aim-pauses", "--runs", "1",
                           "--listing-pages", "10", "--per-page", "20", "--no-plot", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr[-2000:]  # the half-fenced design puts an old price back
    [history] = (out / "history").glob("*.jsonl")
    events = [json.loads(line) for line in history.read_text().splitlines()]
    [paused] = [e for e in events if e["type"] == "paused"]
    page = paused["aimed_at"]
    assert page.startswith("/product/") and paused["worker"] == 1
    # The site credited that request to the stopped worker, and the other worker asked for the page while it slept.
    requests = [e for e in events if e["type"] == "request" and e["path"] == page]
    [resumed] = [e for e in events if e["type"] == "resumed"]
    assert any(e.get("pid") == paused["pids"][0] for e in requests), requests
    assert any(paused["t"] < e["t"] < resumed["t"] and e.get("pid") != paused["pids"][0] for e in requests)
    verdict = json.loads((out / "killtest.json").read_text())["runs"][0]
    assert "zombie_write" in verdict["findings"], verdict["findings"]
