"""A crashed start's missing records and the health warning said right (issue 45, item 4): records a crash left
unstored are lost because the crawler exited with an error before storing them, never "after a crawl that
finished"; the health figure is judged against the shop's own perfect crawl (its listing pages and products over
its products), names the causes the run shows, and says nothing for a design whose spec waives bounded_requests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

from killtest.harness.check.health import health_limit, health_warning, perfect_words
from killtest.harness.promises import Promise

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scraper_fixtures", "async_torn_state.py")


def _figures(value: float | None, missing: int = 0, kills: int = 0, retries: int = 0) -> SimpleNamespace:
    """A run's figures as a RunVerdict holds them: what the warning reads."""
    return SimpleNamespace(requests_per_record=value, missing_records=missing, not_stored_unfinished=0,
                           kills=kills, retries=retries)


def test_the_threshold_is_scaled_by_the_shops_own_perfect_crawl():
    assert perfect_words(525, 500) == "525 / 500 = 1.05" and perfect_words(12, 10) == "12 / 10 = 1.2"
    assert health_limit(1.25, 525, 500) == 1.25 and health_limit(1.25, 12, 10) == round(1.25 * 1.2 / 1.05, 3)
    assert health_warning("idempotent", 1, _figures(1.2), 1.25, 12, 10) is None  # a 2 x 5 shop's perfect crawl
    article = health_warning("naive", 2, _figures(2.6, kills=10), 1.25)
    assert article == ("WARNING: naive run 2: 2.6 requests per stored record, above the health threshold 1.25 (a"
                       " perfect crawl of this shop is 525 / 500 = 1.05): 10 kills (each may cost its start's pages"
                       " again)")
    small = health_warning("naive", 1, _figures(1.6, kills=2), 1.25, 12, 10)
    assert "12 / 10 = 1.2" in small and "525 / 500 = 1.05" in small and "above 1.429" in small


def test_the_warning_names_what_the_run_shows_and_nothing_for_a_waived_promise():
    lost = health_warning("crawl4ai", 1, _figures(1.3, missing=432, kills=1, retries=3), 1.25)
    assert lost.endswith(": 432 records not stored (fewer records to divide by), 1 kill (each may cost its start's"
                         " pages again), 3 retries")
    assert "lease" not in lost and "crashes" not in lost
    assert health_warning("x", 1, _figures(1.4), 1.25).endswith("no lost record, kill or retry in this run explains it")
    assert health_warning("x", 1, _figures(9.0, kills=3), 1.25, waived={Promise.BOUNDED_REQUESTS}) is None
    assert health_warning("x", 1, _figures(9.0), 1.25, waived={Promise.NO_DUPLICATES}) is not None
    assert health_warning("x", 1, _figures(None), 1.25) is None  # nothing stored: no rate


def _replay(spec: str, out: str, cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "killtest", "replay", "--design", spec, "--schedule", "w2",
                           "--listing-pages", "1", "--per-page", "2", "--out", out],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def test_records_a_crash_left_unstored_are_lost_because_it_exited(tmp_path):
    """A real run at an exact point: the kill before w2 (the log's write while the state file is truncated) leaves
    the state empty; the next start crashes in json.load before storing the second product. Its spec promises
    bounded requests here, so the health warning fires, on this 1 x 2 shop's own perfect crawl, naming the record
    not stored and the kill; with bounded_requests waived, no warning."""
    spec = tmp_path / "design.toml"
    text = open(FIXTURE.removesuffix(".py") + ".toml", encoding="utf-8").read()
    spec.write_text(text.replace('"bounded_requests", "no_duplicates"', '"no_duplicates"')
                    .replace("{spec_dir}/async_torn_state.py", FIXTURE))
    done = _replay(str(spec), str(tmp_path / "out"), str(tmp_path))
    assert done.returncode == 1, done.stderr[-2000:]
    assert "lost 1 of 2 records because the crawler exited with status 1 before storing them" in done.stderr
    assert "after a crawl that finished" not in done.stderr
    [run] = json.loads((tmp_path / "out" / "replay.json").read_text())["runs"]
    assert run["outcome"] == "crashed" and run["missing_records"] == 1 and run["requests_per_record"] == 2
    [warning] = [line for line in done.stderr.splitlines() if line.startswith("WARNING:")]
    assert "3 / 2 = 1.5" in warning and warning.endswith("1 record not stored (fewer records to divide by), 1 kill"
                                                         " (each may cost its start's pages again)")
    waived = _replay(FIXTURE.removesuffix(".py") + ".toml", str(tmp_path / "waived"), str(tmp_path))
    assert waived.returncode == 1 and "lost 1 of 2" in waived.stderr and "WARNING:" not in waived.stderr
