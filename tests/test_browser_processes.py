"""A real browser crawler under killtest: Puppeteer's default launch (Chromium detached, in a session of its
own) with Debian's Chromium. After a run of three starts, and after a SIGKILL of killtest itself, no
Chromium or Node.js process of the run is left (counted by the start mark every process of a start
carries: killtest.harness.cgroups); the browser's own /favicon.ico is a side request, not a crawl request.

Needs /usr/bin/chromium and npm (Debian's `chromium` and `npm`); Puppeteer is installed from npm at the
case's pinned release into ~/.cache/killtest/test-browser/. Skipped when they are missing, unless
KILLTEST_REQUIRE_BROWSER=1.
"""

import json
import os
import subprocess
import sys
import time

import psutil
import pytest
import tomllib

from killtest.harness import cgroups
from killtest.harness.design.model import PROJECT_ROOT

CASE = os.path.join(PROJECT_ROOT, "scrapers", "cases", "puppeteer-shop")
CHROMIUM = "/usr/bin/chromium"
BROWSER_NAMES = ("chromium", "chrome", "node")


def _required(reason: str):
    if os.environ.get("KILLTEST_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def node_modules():
    """The case's pinned Puppeteer, installed once (no browser download: Debian's Chromium is used)."""
    if not os.access(CHROMIUM, os.X_OK):
        _required(f"{CHROMIUM} is missing (apt-get install chromium)")
    with open(os.path.join(CASE, "case.toml"), "rb") as spec:
        packages = tomllib.load(spec)["release"][0]["packages"]
    prefix = os.path.expanduser(os.path.join("~/.cache/killtest/test-browser", "-".join(packages)))
    if not os.path.isdir(os.path.join(prefix, "node_modules", "puppeteer")):
        try:
            subprocess.run(["npm", "install", "--prefix", prefix, "--no-audit", "--no-fund", *packages],
                           env={**os.environ, "PUPPETEER_SKIP_DOWNLOAD": "1"}, check=True, capture_output=True,
                           timeout=600)
        except (OSError, subprocess.SubprocessError) as failed:
            _required(f"cannot install {packages} with npm: {failed}")
    return os.path.join(prefix, "node_modules")


def _of_run(harness_pid: int) -> list[psutil.Process]:
    """The browser and Node.js processes carrying a start mark of harness `harness_pid`."""
    found = []
    for pid in cgroups.marked(f"{harness_pid}:", prefix=True):
        try:
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_ZOMBIE and process.name().startswith(BROWSER_NAMES):
                found.append(process)
        except psutil.Error:
            pass
    return found


def _run(node_modules, out, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "killtest", "run", "--design", os.path.join(CASE, "design.toml"),
                             "--runs", "1", "--listing-pages", "2", "--per-page", "10", "--time-limit", "180",
                             "--no-plot", "--out", str(out), *args],
                            cwd=PROJECT_ROOT, env={**os.environ, "NODE_PATH": node_modules},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _watch(harness: subprocess.Popen, until) -> int:
    """The most processes of the run seen at once while it runs, polled until `until(most)` or its end."""
    most = 0
    while harness.poll() is None and not until(most):
        most = max(most, len(_of_run(harness.pid)))
        time.sleep(0.1)
    return most


def test_three_starts_of_a_puppeteer_crawl_leave_no_browser_and_count_no_favicon(node_modules, tmp_path):
    harness = _run(node_modules, tmp_path / "out", "--schedule", "r5,r12")
    try:
        most = _watch(harness, lambda most: False)
        _, err = harness.communicate(timeout=300)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
    left = _of_run(harness.pid)
    assert harness.returncode == 0, err[-2000:]
    assert most >= 3  # Node.js and Chromium's processes ran under the start's mark
    assert [f"{p.pid} {p.name()}" for p in left] == []
    history_file = next((tmp_path / "out" / "history").iterdir())
    events = [json.loads(line) for line in history_file.read_text().splitlines()]
    assert len([e for e in events if e["type"] == "kill"]) == 2
    assert len([e for e in events if e["type"] == "process_started"]) == 3
    assert [e["path"] for e in events if e["type"] == "request" and "favicon" in e["path"]] == []
    assert [e for e in events if e["type"] == "side_request" and e.get("kind") == "browser"]
    assert {e["path"].split("/")[1] for e in events if e["type"] == "request"} == {"list", "product"}


def test_sigkill_of_killtest_mid_crawl_leaves_no_browser(node_modules, tmp_path):
    harness = _run(node_modules, tmp_path / "out", "--schedule", "t60")
    try:
        most = _watch(harness, lambda most: most >= 3)  # the browser is up
        assert harness.poll() is None, "the run ended before its browser was seen"
        harness.kill()
        harness.wait()
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
    deadline = time.monotonic() + 5
    while _of_run(harness.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert most >= 3
    assert [f"{p.pid} {p.name()}" for p in _of_run(harness.pid)] == []
