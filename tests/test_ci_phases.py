"""CI's phase table (.ci/phases.py, issue 46) and make test's rows of it (tests/steps.py): a step's row is written
whatever its exit status, that status is passed on unchanged, its CPU is its waited-for processes', each step's
end is its own, and the table a person reads says which env was built more than once."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

from killtest.harness.design.model import PROJECT_ROOT

PHASES_PY = os.path.join(PROJECT_ROOT, ".ci", "phases.py")


def load(name: str, path: str):
    """A script as a module: .ci/phases.py, and tests/steps.py (make test's two steps)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


phases = load("ci_phases", PHASES_PY)
steps = load("make_test_steps", os.path.join(PROJECT_ROOT, "tests", "steps.py"))

BURN = "s = 0\nfor i in range(3 * 10**6): s += i"  # a few tenths of a CPU second in a child's child


def rows(path) -> list[dict]:
    return [json.loads(line) for line in open(path)]


def test_a_step_is_timed_with_its_childrens_cpu_and_keeps_its_exit_status(tmp_path):
    table = tmp_path / "phases.jsonl"
    env = {**os.environ, "KILLTEST_CI_PHASES": str(table)}
    burn = subprocess.run([sys.executable, PHASES_PY, "step", "burn", "bash", "-c", f'{sys.executable} -c "{BURN}"'],
                          env=env)
    failed = subprocess.run([sys.executable, PHASES_PY, "step", "fails", "bash", "-c", "exit 3"], env=env)
    killed = subprocess.run([sys.executable, PHASES_PY, "step", "killed", "bash", "-c", "kill -9 $$"], env=env)
    assert (burn.returncode, failed.returncode, killed.returncode) == (0, 3, 128 + 9)
    by_name = {row["step"]: row for row in rows(table)}
    assert [by_name[n]["status"] for n in ("burn", "fails", "killed")] == [0, 3, 137]
    assert by_name["burn"]["cpu_s"] > 0  # the grandchild's loop, waited for by bash, waited for by the step
    assert all(row["end"] >= row["start"] for row in by_name.values())


def test_the_table_lists_steps_in_order_ci_in_all_and_each_env_build_naming_one_built_twice():
    steps_ = [{"step": "make test", "start": 1060.0, "end": 1895.0, "cpu_s": 1400.0, "status": 1},
              {"step": "venv", "start": 1000.0, "end": 1046.0, "cpu_s": 30.5, "status": 0}]
    envs = [{"event": "built", "env": "designs/ab12", "packages": ["crawlee[parsel]==1.11.0"], "seconds": 81.0,
             "at": 1200.0, "asker": "prebuild-envs", "root": "/c/killtest/designs"},
            {"event": "built", "env": "designs/ab12", "packages": ["crawlee[parsel]==1.11.0"], "seconds": 70.0,
             "at": 1150.0, "asker": "tests/test_peers.py::test_x", "root": "/c/killtest/designs"},
            {"event": "waited", "env": "cases/cd34", "packages": ["playwright==1.65.2"], "seconds": 12.5,
             "at": 1100.0, "asker": "tests/test_browser_points.py::test_y", "root": "/c/killtest/cases"},
            # the same small env built by two tests, each in a cache of its own: not one env built twice
            {"event": "built", "env": "tools/ef56", "packages": ["six==1.16.0"], "seconds": 3.0, "at": 1300.0,
             "asker": "tests/test_tool_envs.py::test_a", "root": "/tmp/a/cache/killtest/tools"},
            {"event": "built", "env": "tools/ef56", "packages": ["six==1.16.0"], "seconds": 3.0, "at": 1310.0,
             "asker": "tests/test_tool_envs.py::test_b", "root": "/tmp/b/cache/killtest/tools"}]
    lines = phases.table(steps_, envs, t0=1000.0, end=2000.0, ci_cpu_s=1500.0, cores=2, cache="/c/killtest")
    assert lines[1].split() == ["step", "start", "end", "wall", "CPU", "status"]
    assert lines[2].split() == ["venv", "0", "46", "46.0", "30.5", "ok"]
    assert lines[3].split() == ["make", "test", "60", "895", "835.0", "1400.0", "exit", "1"]
    assert lines[4].split()[:6] == ["CI", "in", "all", "0", "1000", "1000.0"] and "1.50 of 2 cores" in lines[4]
    assert lines[5].startswith("ci: env builds (4 built;")
    waited, later, first, own = lines[7], lines[8], lines[9], lines[10]  # in the order they ended
    assert waited.split()[:5] == ["cases/cd34", "88", "100", "12.5", "waited"]
    assert later.split()[:5] == ["designs/ab12", "80", "150", "70.0", "built"] and "test_peers" in later
    assert first.split()[:5] == ["designs/ab12", "119", "200", "81.0", "built"] and first.endswith("prebuild-envs")
    assert own.split()[:2] == ["tools/ef56*", "297"]
    assert lines[-2] == "ci: * in a test's own cache, not CI's (/c/killtest)"
    assert lines[-1] == "ci: built more than once in one cache: designs/ab12"


def test_make_tests_steps_each_get_a_row_ending_when_that_step_ends(tmp_path, monkeypatch):
    """The serial step ends long before the xdist step; its row must say so, though its status is read after."""
    table = tmp_path / "phases.jsonl"
    monkeypatch.setenv("KILLTEST_CI_PHASES", str(table))
    # `late` ends only once `early` has been reaped (its /proc entry gone; a zombie keeps it): the order of the two
    # ends is fixed, not timed, even when the test's process is too slow to be waiting before `early` exits.
    early = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    late = subprocess.Popen([sys.executable, "-c", "import os, time\n"
                             f"while os.path.exists('/proc/{early.pid}'): time.sleep(0.01)"])
    assert steps.waited(("xdist step", late), ("serial step", early), began=0.0) == [0, 0]
    first, second = rows(table)
    assert (first["step"], second["step"]) == ("make test: serial step", "make test: xdist step")
    assert first["end"] <= second["end"] and first["status"] == second["status"] == 0


REPORT = "import os; print(os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0), flush=True)"


def test_the_rest_runs_in_the_background_and_so_does_every_process_it_starts():
    """make test's xdist step is SCHED_IDLE (a core only when no normal process wants it) and at least nice 10,
    and what it starts inherits both: the scrapers, servers and browsers of its tests."""
    child = subprocess.run([sys.executable, "-c", f"{REPORT}\nimport subprocess, sys\n"
                            f"subprocess.run([sys.executable, '-c', {REPORT!r}])"],
                           preexec_fn=steps.in_the_background, capture_output=True, text=True, check=True)
    own = os.getpriority(os.PRIO_PROCESS, 0)
    expected = f"{os.SCHED_IDLE} {min(19, own + steps.REST_NICENESS)}"
    assert child.stdout.splitlines() == [expected, expected]


def test_the_rewrite_cache_is_cold_until_every_test_module_has_a_rewrite_pytest_would_take(tmp_path):
    """As pytest's _read_pyc checks it: magic number, hash-based flags, the source's hash; not the time stamps (a
    checkout gives every file a new one, and pytest still takes the cached rewrite)."""
    import importlib.util

    import pytest

    source = tmp_path / "test_one.py"
    source.write_text("def test_it():\n    assert 1\n")
    (tmp_path / "helper.py").write_text("")  # not a test module: never asked for
    assert steps.rewrite_cache_is_cold(str(tmp_path))
    cached = tmp_path / "__pycache__" / f"test_one.{sys.implementation.cache_tag}-pytest-{pytest.__version__}.pyc"
    cached.parent.mkdir()
    header = importlib.util.MAGIC_NUMBER + b"\x03\x00\x00\x00"
    cached.write_bytes(header + importlib.util.source_hash(source.read_bytes())[:8] + b"code")
    assert not steps.rewrite_cache_is_cold(str(tmp_path))
    os.utime(source, (os.path.getmtime(cached) + 10,) * 2)  # touched, not changed: pytest still takes it
    assert not steps.rewrite_cache_is_cold(str(tmp_path))
    source.write_text("def test_it():\n    assert 2\n")  # changed: pytest rewrites it again
    assert steps.rewrite_cache_is_cold(str(tmp_path))
    cached.write_bytes(b"")  # half-written
    assert steps.rewrite_cache_is_cold(str(tmp_path))
