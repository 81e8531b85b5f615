"""One bug, one failure, at the line that matters (issue 45, item 2): a crashed start's failure is at its own frame
nearest the failing call (the `json.load` of a torn state file), read from the traceback it printed with asyncio's
frames followed, never at its entry point (`sys.exit(asyncio.run(main()))`); a held write's location is the running
task's own frame, or the framework's, never the script's top level past the event loop. Real programs and their
real tracebacks; the held-write dumps are what py-spy prints.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from killtest.harness.campaigns.locate import frames_located
from killtest.harness.check.crash_frames import failed_at, node_frames, python_frames
from killtest.harness.check.distinct import Broken, group_failures
from killtest.harness.faults.points.line import shown_path

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scraper_fixtures", "async_torn_state.py")
SPEC = FIXTURE.removesuffix(".py") + ".toml"
LOAD_LINE = next(n for n, line in enumerate(open(FIXTURE, encoding="utf-8"), 1) if "json.load(state)" in line)
ASYNC_CRASH = textwrap.dedent("""\
    import asyncio, json, sys


    async def resume(path):
        with open(path) as state:
            return json.load(state)


    async def main(path):
        return len(await resume(path))


    if __name__ == "__main__":
        sys.exit(asyncio.run(main(sys.argv[1])))
    """)


def _stderr(program: str, *args: str, env: dict | None = None) -> list[str]:
    done = subprocess.run([sys.executable, program, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 1, done.stderr
    return done.stderr.splitlines()


def test_an_asyncio_crash_is_at_its_json_load_not_at_asyncio_run(tmp_path):
    """A real traceback through asyncio.run, the event loop's frames and two coroutines: the innermost own frame is
    the json.load's line; the entry point and asyncio's and json's frames are passed over."""
    program, state = tmp_path / "crawler.py", tmp_path / "state.json"
    program.write_text(ASYNC_CRASH)
    state.write_text("")  # what a kill leaves of a file rewritten in place
    lines = _stderr(str(program), str(state))
    assert any("asyncio" in line for line in lines) and lines[-1].startswith("json.decoder.JSONDecodeError")
    frame = failed_at(lines)
    assert (frame.path, frame.line, frame.function) == (str(program), 6, "resume")
    assert [f.function for f in python_frames(lines) if f.path == str(program)] == ["resume", "main", "<module>"]


def test_a_crash_inside_a_framework_called_from_the_top_level_is_at_the_frameworks_frame(tmp_path):
    """The script's only own frame is its top level, which called an installed package that raised: the entry point
    tells nothing, the framework's frame does."""
    package = tmp_path / "venv" / "site-packages" / "crawlkit"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("def run(path):\n    import json\n    return json.load(open(path))\n")
    program = tmp_path / "crawler.py"
    program.write_text("import sys, crawlkit\nsys.exit(crawlkit.run(sys.argv[1]))\n")
    (tmp_path / "state.json").write_text("{")
    lines = _stderr(str(program), str(tmp_path / "state.json"), env={"PYTHONPATH": str(package.parent)})
    frame = failed_at(lines)
    assert (frame.path, frame.line) == (str(package / "__init__.py"), 3)
    program.write_text("import sys, json\nsys.exit(json.load(open(sys.argv[1])))\n")  # no framework between
    assert failed_at(_stderr(str(program), str(tmp_path / "state.json"))).at == f"{program}:2"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_a_real_node_crash_is_at_its_json_parse(tmp_path):
    """Crawlee's way of crashing (`console.error(err); process.exit(1)`), with the error's properties after its
    stack: the frame is the program's JSON.parse line, past Node's own frames."""
    fixture = os.path.join(os.path.dirname(FIXTURE), "node_crash_stack.cjs")
    done = subprocess.run(["node", fixture, "http://127.0.0.1:9", str(tmp_path), "--at-once", "--props"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "node:internal" in done.stderr
    parse = next(n for n, line in enumerate(open(fixture, encoding="utf-8"), 1) if "JSON.parse(" in line)
    assert failed_at(done.stderr.splitlines()).at == f"{fixture}:{parse}"


def test_a_node_stack_and_no_traceback():
    stack = ["/app/crawler.mjs:12", "SyntaxError: Unexpected end of JSON input", "    at JSON.parse (<anonymous>)",
             "    at loadState (file:///app/crawler.mjs:12:21)", "    at async main (/app/crawler.mjs:30:3)",
             "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
             "    at /app/node_modules/crawlee/index.js:4:1", "", "Node.js v20.11.0"]
    assert [f.at for f in node_frames(stack)] == ["/app/crawler.mjs:12", "/app/crawler.mjs:30",
                                                   "node:internal/process/task_queues:95",  # Node's: passed over
                                                   "/app/node_modules/crawlee/index.js:4"]
    assert failed_at(stack).at == "/app/crawler.mjs:12"
    assert failed_at(["Killed", "exiting: out of memory"]) is None


def test_a_held_write_past_the_event_loop_is_not_at_the_entry_point():
    """crawl4ai's logger writing from a task of its own: the running task's frames are the framework's, and the
    script's top level that called asyncio.run is no caller of the write. Its own coroutine's write is its own."""
    venv = "/home/me/.venv/lib/python3.11/site-packages"
    dump = ("Thread 7 (active): \"MainThread\"\n"
            f"    AsyncLogger._log ({venv}/crawl4ai/async_logger.py:214)\n"
            f"    AsyncLogger.info ({venv}/crawl4ai/async_logger.py:250)\n"
            "    Handle._run (/usr/lib/python3.11/asyncio/events.py:84)\n"
            "    BaseEventLoop._run_once (/usr/lib/python3.11/asyncio/base_events.py:1936)\n"
            "    run (/usr/lib/python3.11/asyncio/runners.py:118)\n"
            "    <module> (/home/me/crawler.py:61)\n# held thread 7\n")
    found = frames_located(dump)
    assert found.line == f"{venv}/crawl4ai/async_logger.py:214" and "crawler.py:61" not in found.words
    own = dump.replace(f"    AsyncLogger.info ({venv}/crawl4ai/async_logger.py:250)\n",
                       "    save_state (/home/me/crawler.py:30)\n")
    assert frames_located(own).line == "/home/me/crawler.py:30"
    top = dump.replace("    Handle._run (/usr/lib/python3.11/asyncio/events.py:84)\n", "")  # no loop: a plain call
    assert frames_located(top).line == f"{venv}/crawl4ai/async_logger.py:214"  # its top level is still no caller


def test_crashes_at_one_line_are_one_failure_whatever_else_they_lost():
    """Two kills tear the state: one before the last record was stored (the crash left it unstored), one after.
    Their located writes differ (the log's, the state's); the crash's line is theirs, one failure."""
    crash = "start 2 exited by itself with status 1: json.decoder.JSONDecodeError: Expecting value"
    broken = [Broken("w2", ("crashed", "lost"), (crash, "lost 1 of 2 records"), order=0, line="c.py:32",
                     crash_line="c.py:39"),
              Broken("w6", ("crashed",), (crash,), order=1, line="c.py:44", crash_line="c.py:39"),
              Broken("w8", ("lost",), ("lost 1 of 2 records",), order=2, line="c.py:44")]
    first, other = group_failures(broken)
    assert (first.line, [b.point for b in first.points]) == ("c.py:39", ["w2", "w6"])
    assert first.findings == ("crashed", "lost") and first.promises == ("finishes", "no_lost_records")
    assert (other.line, other.findings) == ("c.py:44", ("lost",))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_an_asyncio_crawler_torn_at_two_writes_is_one_failure_at_its_json_load(tmp_path):
    """The fixture rewrites its state in place with a log line between the truncation and the write: a kill before
    the log's write (w2, the first product) and one before the state's (w6, the second) both leave the state empty,
    and the next start crashes in json.load. Exact points: one distinct failure, at the json.load's line."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", SPEC, "--only", "w2,w6",
                           "--listing-pages", "1", "--per-page", "2", "-j", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr[-2000:]
    found = json.loads((out / "explore-async-torn-state.json").read_text())
    assert found["broken"] == 2 and found["distinct_failures"] == 1, found["failures"]
    [failure] = found["failures"]
    assert failure["line"] == f"{shown_path(FIXTURE)}:{LOAD_LINE}" and failure["points"] == "w2, w6"
    assert "crashed" in failure["findings"]
    assert f"> {LOAD_LINE} |         return json.load(state)" in done.stderr
    assert "asyncio.run(main())" not in done.stderr
