"""A kill reaches every process a start made, however it was spawned: a child that left the start's process
group (setsid, as Puppeteer launches its browser) dies with the start, with a SIGKILLed killtest, and
is paused with it. Through the start's cgroup (killtest.harness.cgroups), or its environment mark
where no cgroup is writable.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from killtest.harness import cgroups
from killtest.harness.design.model import PROJECT_ROOT, Launch
from killtest.harness.design.specfile import load_spec
from killtest.harness.running.processes import spawn

# A start that starts a ticker in a session of its own (a detached process, not in the start's group),
# writes the ticker's pid to `detached.pid`, then sleeps. The ticker counts into `ticks` every 10 ms.
DETACHER = textwrap.dedent('''
    import os, subprocess, sys, time
    work = sys.argv[1]
    ticker = subprocess.Popen([sys.executable, "-c", """
    import os, sys, time
    n = 0
    while True:
        n += 1
        with open(sys.argv[1] + ".tmp", "w") as out:
            out.write(str(n))
        os.replace(sys.argv[1] + ".tmp", sys.argv[1])
        time.sleep(0.01)
    """, os.path.join(work, "ticks")], start_new_session=True)
    with open(os.path.join(work, "detached.pid.tmp"), "w") as out:
        out.write(str(ticker.pid))
    os.replace(os.path.join(work, "detached.pid.tmp"), os.path.join(work, "detached.pid"))
    time.sleep(300)
''')


@pytest.fixture
def detacher(tmp_path):
    (tmp_path / "detach.py").write_text(DETACHER)
    (tmp_path / "detach.toml").write_text(textwrap.dedent('''
        [design]
        name = "detacher"
        command = ["{python}", "{spec_dir}/detach.py", "{work_dir}"]
        [store]
        kind = "jsonl"
        path = "{work_dir}/records.jsonl"
        key = "sku"
        fields = ["price"]
    '''))
    work = tmp_path / "work"
    work.mkdir()
    return load_spec(str(tmp_path / "detach.toml")), work


def _detached_pid(work, timeout_s: float = 20.0) -> int:
    deadline = time.monotonic() + timeout_s
    while not (work / "detached.pid").exists():
        assert time.monotonic() < deadline, "the start never started its detached child"
        time.sleep(0.02)
    return int((work / "detached.pid").read_text())


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _gone_within(pids, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.02)
    return [p for p in pids if _alive(p)]


@pytest.fixture(params=["cgroup", "mark"])
def box_kind(request, monkeypatch):
    if request.param == "cgroup" and cgroups.parent() is None:
        pytest.skip("no writable cgroup2 here: only the environment mark can be tested")
    if request.param == "mark":
        monkeypatch.setattr(cgroups, "parent", lambda: None)
    return request.param


def test_a_kill_of_the_start_reaches_a_child_that_left_its_process_group(detacher, box_kind):
    design, work = detacher
    start = spawn(design, Launch(base_url="http://127.0.0.1:9", work_dir=str(work), lease_s=3.0), 0)
    try:
        child = _detached_pid(work)
        assert os.getsid(child) != os.getsid(start.pids[0])  # it did leave the start's session and group
        assert (start.workers[0].box.path is not None) == (box_kind == "cgroup")
        assert child in start.workers[0].box.pids()
        assert start.kill() == -signal.SIGKILL
    finally:
        start.kill()
    assert _gone_within([child], 30.0) == []  # a bound on a leak; polled, so no slower when all is well
    if box_kind == "cgroup":
        assert not os.path.exists(start.workers[0].box.path)  # the box is removed with what it held


def test_a_paused_start_pauses_its_detached_child_too(detacher, box_kind):
    design, work = detacher
    start = spawn(design, Launch(base_url="http://127.0.0.1:9", work_dir=str(work), lease_s=3.0), 0)
    try:
        _detached_pid(work)
        while not (work / "ticks").exists():
            time.sleep(0.01)
        start.workers[0].box.freeze(True)
        time.sleep(0.2)  # a tick in flight lands
        frozen_at = (work / "ticks").read_text()
        time.sleep(0.5)  # fifty ticks, were it running
        assert (work / "ticks").read_text() == frozen_at
        start.workers[0].box.freeze(False)
        deadline = time.monotonic() + 30
        while (work / "ticks").read_text() == frozen_at:
            assert time.monotonic() < deadline, "the detached child did not resume"
            time.sleep(0.01)
    finally:
        start.kill()


@pytest.mark.parametrize("no_cgroup", [False, True], ids=["cgroup", "mark"])
def test_sigkill_of_killtest_leaves_no_detached_child(detacher, tmp_path, no_cgroup):
    design, work = detacher
    env = {**os.environ, **({cgroups.DISABLE: "1"} if no_cgroup else {})}
    harness = subprocess.Popen([sys.executable, "-m", "killtest", "run", "--design", design.spec_file, "--runs", "1",
                                "--schedule", "t30", "--no-plot", "--out", str(tmp_path / "out"),
                                "--work-dir", str(work)], cwd=PROJECT_ROOT, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        found = []
        while not found:  # the run's work dir is a killtest-* folder under --work-dir
            found = [os.path.join(root, "detached.pid") for root, _, names in os.walk(work) if "detached.pid" in names]
            assert harness.poll() is None and time.monotonic() < deadline, "no start made its detached child"
            time.sleep(0.05)
        with open(found[0], encoding="utf-8") as pid_file:
            child = int(pid_file.read())
        assert _alive(child)
        harness.kill()
        harness.wait()
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
    assert _gone_within([child], 30.0) == []
    assert [p for p in cgroups.parents_of(os.getpid()) if os.path.basename(p).startswith(f"killtest-{harness.pid}-")
            and os.path.exists(p)] == []
