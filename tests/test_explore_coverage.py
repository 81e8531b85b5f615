"""Explore says what it covered and what it left out (issue 33): the distinct pages it killed at, the store writes
it saw per kind of file and made points of, and a reason for every write it left out.

The reasons are tested on hand-made strace logs (store_writes is pure); a real explore of a Node.js crawler whose
files are written as Crawlee's storage writes them (fs.promises, on libuv's thread pool) shows its dataset's
writes explored, not dropped, and its coverage on the terminal, in the JSON, the Markdown and the page.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from killtest.harness.campaigns.coverage import (
    NAMED_BY_ID,
    UNREACHABLE,
    UNSTABLE,
    exploration_coverage,
    file_kind,
)
from killtest.harness.design.model import PROJECT_ROOT
from killtest.harness.faults.store_writes import parse_recording
from killtest.harness.report.coverage_words import coverage_html, coverage_lines

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scraper_fixtures")


def log(*writes: tuple[int, str]) -> str:
    return "".join(f'{tid} write(3</w/{name}>, "x", 1) = 1\n' for tid, name in writes)


def explore_pool_crawler(tmp_path, name: str, command: str) -> tuple[subprocess.CompletedProcess, Path]:
    """`killtest explore` of a crawler whose command is `command`'s words then its storage dir, keeping a dataset
    file per record under it (json_files), on a 1 x 3 shop, one job, 20 s of patience; its result and out dir."""
    spec = tmp_path / "design.toml"
    spec.write_text(f'[design]\nname = "{name}"\ndoes_not_promise = ["bounded_requests"]\n'
                    f'command = [{command}, "{{work_dir}}/storage"]\n\n[store]\nkind = "json_files"\n'
                    'path = "{work_dir}/storage/datasets"\nkey = "sku"\nfields = ["price", "name"]\n')
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", str(spec), "--listing-pages", "1",
                           "--per-page", "3", "--jobs", "1", "--no-progress-timeout", "20", "--out", str(out)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)
    return done, out


def point(spec: str, page: str = "", landed: bool = True) -> SimpleNamespace:
    return SimpleNamespace(point=spec, page=page, landed=landed)


def test_a_file_kind_folds_numbers_and_ids():
    assert file_kind(("storage/datasets/default/000000007.json",)) == "storage/datasets/default/N.json"
    assert file_kind(("storage/request_queues/default/3dKP6nvOXJs3nbl.json",)) == \
        "storage/request_queues/default/N.json"
    assert file_kind(("records.jsonl",)) == "records.jsonl"


def rename(tid: int, source: str, target: str) -> str:
    return f'{tid} rename("/w/{source}", "/w/{target}") = 0\n'


def test_writes_two_threads_race_for_are_offered_by_their_file_and_the_rest_left_out_each_with_its_reason():
    """Thread 8's 1st write comes after thread 7's 1st: strace cannot stop at it by count, and on the second
    recording the pool's threads took the dataset's writes the other way round; both are named by their file
    (`w1:datasets/1.json`: the same calls made that file on both recordings). Left out, each with its reason: a
    file the second recording made with other calls (unreachable by count, by file), one whose place another
    write took (unstable), and a file named by a hash (faults/file_aims.named_by_id)."""
    first = parse_recording(log((7, "queue/a.json"), (8, "datasets/1.json"), (7, "datasets/2.json"),
                                (9, "datasets/3.json"), (7, "queue/3dKP6nvOXJs3nbl.json"))
                            + log((7, "datasets/4.json")), {"work_dir": "/w"})
    second = parse_recording(log((7, "queue/a.json"), (7, "datasets/1.json"), (8, "datasets/2.json"))
                             + rename(9, "datasets/3.json.tmp", "datasets/3.json")
                             + log((9, "datasets/3.json"), (8, "queue/3dKP6nvOXJs3nbl.json"), (10, "other.json")),
                             {"work_dir": "/w"})
    outcomes = [point("r1", "/list/0"), point("r2", "/product/0"), point("r3", "/product/0"), point("w1"),
                point("aw1")]
    coverage = exploration_coverage(outcomes, 4, first, second, points_given=False)
    assert coverage["pages_killed_at"] == ["/list/0", "/product/0"]
    assert coverage["writes"] == [{"file": "datasets/N.json", "seen": 4, "points": 2, "after_points": 0, "left_out": 2},
                                  {"file": "queue/N.json", "seen": 1, "points": 0, "after_points": 0, "left_out": 1},
                                  {"file": "queue/a.json", "seen": 1, "points": 1, "after_points": 1, "left_out": 0}]
    assert coverage["left_out"] == [f"1 write (1 to datasets/N.json): {UNREACHABLE}",
                                    f"1 write (1 to datasets/N.json): {UNSTABLE}",
                                    f"1 write (1 to queue/N.json): {NAMED_BY_ID}",
                                    "1 of the crawl's 4 requests have no request point"]
    lines = coverage_lines(coverage)
    assert lines[0] == "coverage: killed at 2 distinct pages of the 4 a crawl asks for (/list/0, /product/0)"
    assert "  store writes to datasets/N.json: 4 seen, 2 explored, 2 left out" in lines
    assert "  store writes to queue/a.json: 1 seen, 1 explored (and 1 after)" in lines  # w1's after twin, aw1
    assert f"1 write (1 to datasets/N.json): {UNSTABLE}" in coverage_html(coverage).replace("&#x27;", "'")


def test_points_given_by_hand_say_no_write_was_listed():
    coverage = exploration_coverage([point("r2", "/product/0")], 8, None, None, points_given=True)
    assert coverage["writes"] == [] and coverage["left_out"] == [
        "only the points given with --only were run: no recording listed the store's writes"]


needs_node_and_strace = pytest.mark.skipif(shutil.which("node") is None or shutil.which("strace") is None,
                                           reason="needs node and strace")


@pytest.mark.slow
@needs_node_and_strace
def test_a_node_crawlers_thread_pool_writes_are_explored_and_its_coverage_said(tmp_path):
    """fs.promises writes go to libuv's four pool threads, a different one each recording: without one pool thread
    for the recording and the write gate, explore offered none of the dataset's writes and said nothing. Explored,
    they find the crawler's mistake: writeFile truncates the record's file before it writes it, and a start killed
    in between leaves an empty file the next start takes for a stored record."""
    done, out = explore_pool_crawler(tmp_path, "node-pool-writes",
                                     f'"node", "{FIXTURES}/node_pool_writes.mjs", "--base", "{{base_url}}", "--out"')
    assert done.returncode == 1, done.stderr[-3000:]
    found = json.loads((out / "explore-node-pool-writes.json").read_text())
    coverage = found["coverage"]
    assert coverage["pages_asked"] == 4
    assert coverage["pages_killed_at"] == ["/list/0", "/product/0", "/product/1", "/product/2"]
    writes = {w["file"]: w for w in coverage["writes"]}
    assert writes["storage/datasets/SKU-N.json"] == {"file": "storage/datasets/SKU-N.json", "seen": 3, "points": 3,
                                                     "after_points": 3, "left_out": 0}
    assert coverage["left_out"] == []
    dataset_points = [o for o in found["outcomes"] if "storage/datasets/SKU-" in o["where"].split(",")[0]]
    before = [o for o in dataset_points if not o["point"].startswith("aw")]  # after the write, the file is whole
    assert len(before) == 3 and all(o["landed"] and not o["valid"] for o in before)
    assert len(dataset_points) == 6 and all(o["valid"] for o in dataset_points if o not in before)
    assert [f["place"] for f in found["failures"]] == ["before the write to storage/datasets/SKU-N.json"]
    assert "--no-progress-timeout 20" in found["failures"][0]["replay"]  # the patience the exploration was given
    assert "coverage: killed at 4 distinct pages of the 4 a crawl asks for" in done.stderr
    assert "store writes to storage/datasets/SKU-N.json: 3 seen, 3 explored" in done.stderr
    assert "## Coverage" in (out / "explore-node-pool-writes.md").read_text()
    assert '<section class="coverage">' in (out / "explore-node-pool-writes.html").read_text()
