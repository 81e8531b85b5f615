"""Shared fixtures: a small catalog served by the real fixture site, and designs made for the tests."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
import time

import psutil
import pytest
from hypothesis import HealthCheck, settings

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness import lifeline
from killtest.harness.design.model import Design, StoreSpec


@pytest.fixture(autouse=True)
def no_watchdog_or_zombie_outlives_a_test():
    """An in-process API call (killtest.api, killtest.spread) starts this process's watchdog
    (harness/lifeline.py), a child that lives as long as the process: right for a user's pytest session,
    but the runner's tests count this process's children, so every test says goodbye to it. And this
    process becomes a child subreaper once a test pre-forks (killtest.harness.running.prefork): what a
    killed scraper or proxy leaves is handed to it and would stay a zombie; it is reaped here."""
    yield
    lifeline.stop_watchdog()
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error, ChildProcessError):
            if child.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(child.pid, os.WNOHANG)


@pytest.fixture(scope="session")
def recording_proxy_env() -> str:
    """The recording proxy's interpreter, its env built before the first recording test (issue 36): on a fresh
    machine that is the one slow step (mitmproxy from the registry, a minute or so), taken once and said, not
    inside a test's own timeout. xdist workers share it: the env cache's lock lets one build and the rest wait."""
    from killtest.harness.running.recorded import proxy_python

    return proxy_python(say=print)


@pytest.fixture
def small_catalog():
    """Four listing pages of ten products: 44 requests for a full crawl."""
    return build_catalog(listing_pages=4, products_per_page=10, seed=7)


@pytest.fixture
def site(small_catalog):
    with SiteServer(small_catalog) as server:
        yield server


@pytest.fixture
def default_site():
    """The article's catalog: 25 listing pages, 500 products, 525 requests."""
    with SiteServer(build_catalog()) as server:
        yield server


def children_left() -> list[psutil.Process]:
    """This test process's children, but for the resource tracker multiprocessing starts with its first `spawn`
    pool (an in-process `explore -j 2`: killtest.harness.campaigns.parallel) and keeps until the process exits:
    Python's own, not something a run left behind."""
    tracker = "multiprocessing.resource_tracker"
    return [c for c in psutil.Process().children(recursive=True)
            if not any(tracker in part for part in _cmdline(c))]


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def fixture_design(name: str, module: str) -> Design:
    """A test-only design whose store is empty; only its process behaviour matters."""
    store = StoreSpec(kind="sqlite", path="{work_dir}/unused.sqlite", records="SELECT 1 AS sku, 1 AS price WHERE 0")
    return Design(name=name, store=store, module=module, args=("--base", "{base_url}"), claims_idempotence=True)


@pytest.fixture
def idempotent_behind_shell():
    """wrapped_idempotent_spec, for tests that write such a spec."""
    return wrapped_idempotent_spec


def wrapped_idempotent_spec(name: str, shell: str, design_extra: str = "") -> str:
    """A `command` design's spec: `sh -c SHELL` that ends by exec'ing the idempotent scraper ("$0" "$@"), its
    SQLite store read as the idempotent design's; `design_extra` adds lines to [design] (an env table)."""
    quoted = shell.replace("\\", "\\\\").replace('"', '\\"')
    return f"""
[design]
name = "{name}"
command = ["sh", "-c", "{quoted}",
           "{{python}}", "-m", "killtest.scrapers.idempotent", "--base", "{{base_url}}", "--db", "{{store}}",
           "--lease", "{{lease_s}}", "--crawl", "{{crawl}}"]
{design_extra}
[store]
kind = "sqlite"
path = "{{work_dir}}/idempotent.sqlite"
records = \"\"\"SELECT json_extract(data, '$.sku') AS sku, json_extract(data, '$.price') AS price,
    json_extract(data, '$.name') AS name FROM records\"\"\"
key = "sku"
fields = ["price", "name"]
"""


# Hypothesis: `make test` runs a few kill schedules per property; `--hypothesis-profile=campaign` runs many.
settings.register_profile("killtest-ci", max_examples=6, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("campaign", max_examples=200, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.load_profile("killtest-ci")


def pytest_collection_modifyitems(config, items):
    """The slow tests first. Under pytest-xdist the longest tests decide the step's tail: one that starts last
    (a real framework's case, an explore of every write) runs alone on one core while the other workers sit
    idle. Started first, the short ones fill in around it. The sort is stable, so every worker collects the
    same order, as xdist requires.

    `--dist worksteal` (make test, make check) hands each worker a contiguous slice of that order, so the first
    worker's slice holds the slow tests, run one after another in file order, while the others run fast ones and,
    once done, steal the end of its slice. From 2026-12-06 to 2026-12-07 the order was dealt into one lane per
    worker instead, each starting on its share of the slow tests by weight; that never ran under xdist (a worker's
    own --dist option says "no"), and once it did, fresh-clone CIs took 612, 669 and 659 s against 593 and 597 s
    without it: six heavy tests at once, most of them waiting on slow pages, hangs and env builds, left the cores
    idle (1.76 of 2 busy against 1.85) where fast tests had filled them (docs/reference/tests.md)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def browser_required(reason: str):
    """A browser test whose Chromium or npm is missing: skipped, saying what to install, unless
    KILLTEST_REQUIRE_BROWSER=1 (as in CI) makes it a failure."""
    if os.environ.get("KILLTEST_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def _cpu_s() -> float:
    """CPU seconds (user + sys) of this process and of the children it has waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def python3_past_its_shim() -> None:
    """The tests' own programs run as `python3 program.py` (a design outside the repository, as a user writes it).
    Where `python3` on PATH is a version manager's shim, not the interpreter (pyenv's is a bash script that runs
    pyenv, more bash, on every start: 0.07 CPU-s, and under explore's strace each of its processes is traced), the
    interpreter's folder goes first on PATH, as `pyenv exec` puts it for the program it starts: the same python3,
    reached directly. Asked once, by the controller; xdist's workers inherit the PATH."""
    found = shutil.which("python3")
    if found is None:
        return
    with open(found, "rb") as program:
        if program.read(2) != b"#!":  # the interpreter itself
            return
    asked = subprocess.run([found, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True)
    if asked.returncode == 0 and os.path.isabs(asked.stdout.strip()):
        os.environ["PATH"] = os.path.dirname(asked.stdout.strip()) + os.pathsep + os.environ.get("PATH", "")


def pytest_configure(config):
    """KILLTEST_TEST_CPU: this session's folder inside it, made by the controller; xdist's workers inherit it.
    And `python3` reached past a shim (python3_past_its_shim)."""
    if not hasattr(config, "workerinput"):
        python3_past_its_shim()
    if os.environ.get("KILLTEST_TEST_CPU") and not hasattr(config, "workerinput"):
        session = os.path.join(os.environ["KILLTEST_TEST_CPU"], f"session-{os.getpid()}")
        os.makedirs(session, exist_ok=True)
        os.environ["KILLTEST_TEST_CPU_SESSION"] = session


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """KILLTEST_TEST_CPU=FOLDER: each test's CPU seconds (set-up, call and tear-down, its waited-for subprocesses
    included) appended to FOLDER/<pid>.jsonl, and the costliest printed at the end. The suite is CPU-bound on two
    cores, so CPU, not wall time, says what a test costs CI (docs/reference/tests.md)."""
    folder = os.environ.get("KILLTEST_TEST_CPU_SESSION")
    began, wall = _cpu_s(), time.monotonic()
    yield
    if folder:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{os.getpid()}.jsonl"), "a", encoding="utf-8") as out:
            out.write(json.dumps({"test": item.nodeid, "cpu_s": round(_cpu_s() - began, 2),
                                  "wall_s": round(time.monotonic() - wall, 2),
                                  "ended": round(time.time(), 2)}) + "\n")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    folder = os.environ.get("KILLTEST_TEST_CPU_SESSION")
    if not folder or hasattr(config, "workerinput") or not os.path.isdir(folder):
        return
    spent = [json.loads(line) for name in os.listdir(folder) if name.endswith(".jsonl")
             for line in open(os.path.join(folder, name), encoding="utf-8")]
    spent.sort(key=lambda t: -t["cpu_s"])
    terminalreporter.section(f"CPU: {sum(t['cpu_s'] for t in spent):.0f} CPU-s in {len(spent)} tests, the costliest")
    for t in spent[:20]:
        terminalreporter.write_line(f"{t['cpu_s']:8.1f} CPU-s {t['wall_s']:8.1f} s  {t['test']}")
