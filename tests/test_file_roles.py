"""The files a crawler writes named for what they are (issue 45, item 3): the store, the crawler's own state, and
its framework's logs and caches, by path and the spec's store; kinds of file folded without mangling a name
(`crawl4ai-home/.crawl4ai` never `N-home/.N`); a kill off its aim said in plain words. Pure functions, and the
paths crawl4ai 0.9.5 and the suite's fixtures write.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from killtest.harness.check.distinct import folded
from killtest.harness.faults.file_roles import (
    CACHE,
    LOG,
    STATE,
    STORE,
    file_kind,
    file_role,
    off_aim_words,
    role_words,
    store_path,
)


def test_each_file_is_the_store_its_own_state_a_log_or_a_cache():
    store = store_path("{work_dir}/records.jsonl")
    assert store == "records.jsonl" and store_path("/srv/shop/db.sqlite") == "/srv/shop/db.sqlite"
    assert file_role("records.jsonl", store) == STORE and file_role("", store) == STORE  # the work dir's fsync
    assert file_role("crawl_state.json", store) == STATE and file_role("progress.txt", store) == STATE
    assert file_role("crawl4ai-home/.crawl4ai/crawler.log", store) == LOG
    assert file_role("logs/spider.txt", store) == LOG and file_role("run.log.1", store) == LOG
    assert file_role("crawl4ai-home/.crawl4ai/robots/robots_cache.db", store) == CACHE
    assert file_role("home/.cache/ms-playwright/x", store) == CACHE
    assert file_role("pkg/__pycache__/m.cpython-311.pyc", store) == CACHE
    # SQLite's journal beside the database, and a folder store's files, are the store's.
    assert file_role("progress.sqlite-journal", "progress.sqlite") == STORE
    assert file_role("dataset/000007.json", store_path("{work_dir}/dataset/")) == STORE
    assert file_role("catalog.json", "") == STORE  # the store's path unknown: no log or cache is taken for it
    assert file_role("app.log", "") == LOG
    assert [role_words(r) for r in (STORE, STATE, LOG, CACHE)] == ["the store", "the crawler's own state", "a log",
                                                                   "a cache"]


def test_a_kind_of_file_folds_numbers_and_ids_but_never_a_name():
    assert file_kind(("crawl4ai-home/.crawl4ai/crawler.log",)) == "crawl4ai-home/.crawl4ai/crawler.log"
    assert file_kind(("c4a-home/.crawl4ai/robots/robots_cache.db",)) == "c4a-home/.crawl4ai/robots/robots_cache.db"
    assert file_kind(("dataset/000001.json",)) == "dataset/N.json"
    assert file_kind(("queues/default/3dKP6nvOXJs3nbl.json",)) == "queues/default/N.json"
    assert file_kind(("7.json.ak7wz2_q.json.tmp", "7.json")) == "N.json.N.json.tmp to N.json"
    assert file_kind(("",)) == "the work dir" and file_kind(()) == "the store"
    assert folded("/product/12") == "/product/N" and folded("r12,t0.43") == "rN,tN.N"  # pages and points, as before


def test_a_kill_off_its_aim_is_said_in_plain_words():
    note = ('aimed at write number 11 of its thread to crawl_state.json, but strace\'s count reached'
            ' write(12<crawl4ai-home/.crawl4ai/crawler.log>, "[INIT].... Crawl4AI 0.9.5"..., 80: this start named its'
            ' files otherwise than the recording that aimed the point (a port, pid or random name in a file name?)')
    said = off_aim_words(note, "records.jsonl")
    assert said == ("the kill was meant for the 11th write of its thread to crawl_state.json (the crawler's own"
                    " state), but it came at a write to crawl4ai-home/.crawl4ai/crawler.log (a log): this start named"
                    " its files otherwise than the recording that aimed the point (a port, a pid or a random part in"
                    " a name?)")
    assert "number 11" not in said and "strace" not in said
    assert off_aim_words("something else happened") == "something else happened"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_explores_coverage_lists_the_store_the_state_and_the_log_apart(tmp_path):
    """The asyncio crawler writes its records (the store), its crawl_state.json and its crawl.log: every write is
    explored, and the coverage says each for what it is, the store first."""
    spec = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scraper_fixtures", "async_torn_state.toml")
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", spec, "--listing-pages", "1",
                           "--per-page", "2", "-j", "1", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr[-2000:]
    writes = json.loads((tmp_path / "explore-async-torn-state.json").read_text())["coverage"]["writes"]
    assert [(w["file"], w.get("role", STORE)) for w in writes] == [
        ("records.jsonl", STORE), ("crawl_state.json", STATE), ("crawl.log", LOG)]
    lines = done.stderr.splitlines()
    assert "  store writes to records.jsonl: 2 seen, 2 explored (and 2 after)" in lines
    assert "  state writes to crawl_state.json: 2 seen, 2 explored (and 2 after)" in lines
    assert "  log writes to crawl.log: 2 seen, 2 explored (and 2 after)" in lines
    markdown = (tmp_path / "explore-async-torn-state.md").read_text()
    assert "| `crawl.log` (log) | 2 |" in markdown and "| writes to |" in markdown
