"""A Node.js command's store write located in its own source, from outside (issue 24, point 2).

A real explore of a CommonJS scraper (tests/scraper_fixtures/node_writer.cjs) that writes its records
with fs.appendFileSync from a named function: the held start runs with V8's perf map, the write gate's
node_stack.py reads the held thread's stack against it, and the point is described with the function,
file and first line. With --async the write is made by libuv's worker thread: one line says so, and names
no frame (the held thread's stack is read to its own end, not into the memory above it, where stale code
addresses once named functions that thread never ran). No perf map is left in /tmp either way.
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

from killtest.harness.campaigns.locate import innermost_js, js_located
from killtest.harness.faults.node_stack import OFF_MAIN_THREAD, final_paths, mapping_end, stack_words

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


def test_a_threads_stack_is_read_to_the_end_of_its_own_mapping_not_into_the_memory_above_it():
    """A real process with threads waiting in a system call: each thread's stack words end where the mapping
    that holds its sp ends. Read on (as before: 1 MiB from sp), a worker thread's 8 MiB stack, whose sp sits a
    few KB below its top, gave 1 MiB of the mappings above it, and their stale V8 code addresses named
    Crawlee's module top levels as the writer of a write libuv's thread pool made."""
    code = "import threading, time\nfor _ in range(2): threading.Thread(target=time.sleep, args=(60,)).start()\n" \
           "time.sleep(60)"
    process = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 10
        while len(os.listdir(f"/proc/{process.pid}/task")) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # each thread in its sleep's system call
        tids = sorted(int(t) for t in os.listdir(f"/proc/{process.pid}/task"))
        assert len(tids) == 3
        for tid in tids:
            with open(f"/proc/{tid}/syscall", encoding="ascii") as held:
                sp = int(held.read().split()[7], 16)
            assert 0 < len(stack_words(str(process.pid), tid)) <= mapping_end(str(process.pid), sp) - sp
    finally:
        process.kill()
        process.wait()


def test_a_write_on_a_thread_other_than_the_main_one_with_no_frame_of_the_program_says_so():
    assert js_located("# not the main thread: 12 of 10\nBuiltin:CEntry\n").words == OFF_MAIN_THREAD
    assert js_located("Builtin:CEntry\n") is None  # the main thread: the generic line (locate.NO_JS_FRAME)
    # a worker_threads thread runs JavaScript: its own frame is named
    assert js_located("# not the main thread: 12 of 10\nJS:~save /app/app.cjs:3:20\n").own == \
        "save (/app/app.cjs:3, the function's first line)"


def test_a_frame_in_a_tool_envs_build_folder_is_named_by_the_envs_link(tmp_path):
    """V8 resolves NODE_PATH's `<hash>` link to the folder the env was built in (tool_envs.py); a reader finds
    the env by its link."""
    built = "9df27fc11396b62b.8283-1796482363286222937"
    (tmp_path / built).mkdir()
    os.symlink(built, tmp_path / "9df27fc11396b62b")
    frame = f"JS:~ {tmp_path}/{built}/node_modules/parse5/dist/cjs/common/html.js:1:1"
    assert final_paths(frame) == f"JS:~ {tmp_path}/9df27fc11396b62b/node_modules/parse5/dist/cjs/common/html.js:1:1"
    orphan = f"JS:~save {tmp_path}/0123456789abcdef.1-2/app.cjs:3:20"  # no link names it: left as it is
    assert final_paths(orphan) == orphan


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
def test_a_write_from_libuvs_worker_thread_says_it_ran_there_and_names_no_frame(tmp_path):
    where = _explore(tmp_path, "--async")
    assert where.endswith(f", {OFF_MAIN_THREAD}"), where


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None or shutil.which("strace") is None, reason="needs node and strace")
def test_a_command_that_starts_with_env_is_located_in_the_node_program_env_runs(tmp_path):
    """`env NAME=VALUE node ...`: node, not env, is the program; it gets V8's map and its write is located."""
    where = _explore(tmp_path, before=("env", "-u", "NO_SUCH_VAR", "NODE_ENV=production"))
    assert where.endswith(f", in saveRecord ({FIXTURE}:{SAVE_RECORD_LINE}, the function's first line)"), where
