"""A Node.js command's store write located in its own source, from outside (issue 24, point 2).

A real explore of a CommonJS scraper (tests/scraper_fixtures/node_writer.cjs) that writes its records
with fs.appendFileSync from a named function: the held start runs with V8's perf map, the write gate's
node_stack.py reads the held thread's stack against it, and the point is described with the function,
file and first line. With --async the write is made by libuv's worker thread: the one-line fallback.
No perf map is left in /tmp either way.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import time

import psutil
import pytest

from killtest.harness.campaigns.locate import NO_JS_FRAME, innermost_js

FIXTURE = os.path.realpath(os.path.join(os.path.dirname(__file__), "scraper_fixtures", "node_writer.cjs"))
SAVE_RECORD_LINE = next(n for n, line in enumerate(open(FIXTURE, encoding="utf-8"), 1)
                        if line.startswith("async function saveRecord("))


def test_the_programs_own_javascript_frame_is_the_first_outside_node_and_its_packages():
    frames = ("Builtin:CEntry_Return1_ArgvOnStack_BuiltinExit\n"
              "JS:~writeSync node:fs:898:19\n"
              "JS:*write /app/node_modules/pino/lib/write.js:4:10\n"
              "JS:^saveRecord /app/app.cjs:3:20\n"
              "JS:~ /app/app.cjs:1:1\n")
    assert innermost_js(frames) == "saveRecord (/app/app.cjs:3, the function's first line)"
    assert innermost_js("Script:~ file:///app/app.mjs:1:1\n") == "the module's top level (/app/app.mjs)"
    assert innermost_js("JS:~ /app/app.cjs:9:14\n") == "(anonymous) (/app/app.cjs:9, the function's first line)"
    assert innermost_js("JS:~writeSync node:fs:898:19\nBytecodeHandler:Star0\n") is None


def _maps_left_behind(before: set[str]) -> set[str]:
    """New /tmp/perf-<pid>.map files whose process is dead. /tmp is the machine's: a map of a Node.js process
    another job is locating meanwhile is its own while that process lives, and goes when it dies (a few
    moments are given for that); this explore's processes are all dead when it returns."""
    deadline = time.monotonic() + 5
    while True:
        left = {m for m in set(glob.glob("/tmp/perf-*.map")) - before
                if not psutil.pid_exists(int(m.rsplit("-", 1)[1].removesuffix(".map")))}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _explore(tmp_path, *extra: str, before: tuple[str, ...] = ()) -> str:
    spec = tmp_path / "design.toml"
    command = json.dumps([*before, "node", FIXTURE, "{base_url}", "{store}", *extra])
    spec.write_text(f'[design]\nname = "node-writer"\ncommand = {command}\n\n[store]\nkind = "jsonl"\n'
                    'path = "{work_dir}/records.jsonl"\nkey = "sku"\nfields = ["price", "name"]\n')
    out = tmp_path / "results"
    out.mkdir()
    maps = set(glob.glob("/tmp/perf-*.map"))
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", str(spec), "--only", "w1",
                           "--listing-pages", "1", "--per-page", "2", "-j", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr  # w1 kills after the 1st record: the next start stores it twice
    assert not _maps_left_behind(maps)  # the located start's map is deleted, the next one made none
    assert not list(tmp_path.glob("isolate-*.log"))  # nor V8's code log in the start's directory (the spec's)
    found = json.loads((out / "explore-node-writer.json").read_text())
    assert [f["example"] for f in found["failures"]] == ["w1"]
    where = next(o["where"] for o in found["outcomes"] if o["point"] == "w1")
    assert where in done.stderr
    return where


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None or shutil.which("strace") is None, reason="needs node and strace")
def test_a_synchronous_write_is_located_in_the_function_that_made_it(tmp_path):
    where = _explore(tmp_path)
    assert where.startswith("before the 1st write to records.jsonl, ")
    assert where.endswith(f", in saveRecord ({FIXTURE}:{SAVE_RECORD_LINE}, the function's first line)"), where


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None or shutil.which("strace") is None, reason="needs node and strace")
def test_a_write_from_libuvs_worker_thread_says_in_one_line_that_no_location_was_found(tmp_path):
    where = _explore(tmp_path, "--async")
    assert where.endswith(f", {NO_JS_FRAME}"), where


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None or shutil.which("strace") is None, reason="needs node and strace")
def test_a_command_that_starts_with_env_is_located_in_the_node_program_env_runs(tmp_path):
    """`env NAME=VALUE node ...`: node, not env, is the program; it gets V8's map and its write is located."""
    where = _explore(tmp_path, before=("env", "-u", "NO_SUCH_VAR", "NODE_ENV=production"))
    assert where.endswith(f", in saveRecord ({FIXTURE}:{SAVE_RECORD_LINE}, the function's first line)"), where
