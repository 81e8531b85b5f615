"""Time spent waiting for a CPU is not time without progress (harness/running/start_watch.py).

Real processes in real cgroups: two processes spinning on one core keep one of them waiting for a CPU the
whole time, which the kernel's pressure stall information counts (cpu.pressure).
"""

import os
import subprocess
import sys
import time

import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness import cgroups
from killtest.harness.design.model import Design, StoreSpec
from killtest.harness.faults.schedule import KillSchedule
from killtest.harness.running.runner import RunSettings, run_kill_test

# Two processes spinning on one core for argv[1] seconds: one of them always waits for it. (On one core: the
# pressure of a cgroup is averaged over the cores its processes were on, so three spinners on two cores count
# half their time waiting, as that is the share of the cores' work they lost.)
SPIN = """
import os, sys, time
os.sched_setaffinity(0, [min(os.sched_getaffinity(0))])
end = time.monotonic() + float(sys.argv[1])
child = os.fork()
while time.monotonic() < end:
    pass
if child == 0:
    os._exit(0)
os.waitpid(child, 0)
if len(sys.argv) > 2:
    open(sys.argv[2], "a").close()  # an empty store: it ran and stored nothing
"""


def a_box_with_pressure() -> cgroups.Box:
    box = cgroups.Box("cpu-wait-test")
    if box.cpu_wait_s() is None:
        box.remove()
        pytest.skip("no writable cgroup v2 with cpu.pressure here (the watch then counts the harness's lateness)")
    return box


def waited_in_box(box: cgroups.Box, code: str, *args: str) -> float:
    before = box.cpu_wait_s()
    subprocess.run(box.wrap([sys.executable, "-c", code, *args]), check=True)
    after = box.cpu_wait_s()
    assert before is not None and after is not None
    return after - before


# Serial: a sleeper's start-up waits for a CPU too, and in the background step that wait can be seconds.
@pytest.mark.serial
def test_a_box_counts_the_seconds_its_processes_waited_for_a_cpu_and_not_the_seconds_they_slept():
    box = a_box_with_pressure()
    try:
        spun = waited_in_box(box, SPIN, "1.0")
        slept = waited_in_box(box, "import time; time.sleep(1.0)")
    finally:
        box.empty()
    assert spun >= 0.7, spun  # one of them always waited: about the whole second
    assert slept < 0.2, slept


def test_a_start_kept_waiting_for_a_cpu_is_not_stopped_for_making_no_progress(tmp_path):
    """No output, no request, no store change for 2 s, with no_progress_s 0.6: but every moment of it a
    process of the start was ready to run and had no core, so nothing was stalled. (Before, the watch stopped
    it after 0.6 s, as a fresh-clone CI's SCHED_IDLE step stopped a correct crawl after 30 s without a core.)"""
    a_box_with_pressure().remove()
    spinner = Design(name="spinner", store=StoreSpec(kind="jsonl", path="{work_dir}/r.jsonl"),
                     command_template=(sys.executable, "-c", SPIN, "2.0", "{work_dir}/r.jsonl"))
    with SiteServer(build_catalog(listing_pages=1, products_per_page=2, seed=1)) as site:
        history = run_kill_test(spinner, KillSchedule(seed=None, points=()), site, str(tmp_path),
                                RunSettings(no_progress_s=0.6, time_limit_s=60))
    assert history.of_type("time_limit") == []
    assert [e["returncode"] for e in history.of_type("process_exited")] == [0]
    assert history.first("run_finished")["cpu_wait_s"] >= 1.0


def test_a_hung_start_on_an_idle_core_is_still_stopped_and_the_wait_it_had_is_said(tmp_path):
    """The other side: a start that waits for nothing is stopped after no_progress_s as before."""
    hung = Design(name="hung", store=StoreSpec(kind="jsonl", path="{work_dir}/r.jsonl"),
                  command_template=(sys.executable, "-c", "import time; time.sleep(60)"))
    with SiteServer(build_catalog(listing_pages=1, products_per_page=2, seed=1)) as site:
        began = time.monotonic()
        history = run_kill_test(hung, KillSchedule(seed=None, points=()), site, str(tmp_path),
                                RunSettings(no_progress_s=1.0, time_limit_s=60))
        took = time.monotonic() - began
    stopped = history.first("time_limit")
    assert stopped is not None and stopped["no_progress_s"] >= 1.0
    assert took < 45  # long before the time limit (a tighter bound would be the machine's load)
    assert os.path.exists(tmp_path)
