"""Sleeping until a start's process exits (harness/running/exit_wait.py): woken by the exit, not a timer."""

import os
import resource
import signal
import subprocess
import time

import pytest

from killtest.harness.design.model import Design, Launch, StoreSpec
from killtest.harness.running.exit_wait import sleep_until_an_exit
from killtest.harness.running.processes import spawn


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_it_wakes_when_one_of_the_processes_exits_not_at_its_timeout():
    short, long = subprocess.Popen(["sleep", "0.2"]), subprocess.Popen(["sleep", "60"])
    try:
        before, began = open_fds(), time.monotonic()
        sleep_until_an_exit([long.pid, short.pid], 60)
        assert time.monotonic() - began < 30  # the exit woke it (a loaded machine may be late, never 60 s)
        assert short.poll() == 0 and long.poll() is None
        assert open_fds() == before  # each pidfd closed
    finally:
        long.kill()
        long.wait()


def test_with_no_exit_it_returns_after_its_timeout_and_a_process_gone_already_returns_at_once():
    running = subprocess.Popen(["sleep", "60"])
    try:
        began = time.monotonic()
        sleep_until_an_exit([running.pid], 0.3)
        assert time.monotonic() - began >= 0.3 and running.poll() is None
    finally:
        running.kill()
        running.wait()
    began = time.monotonic()
    sleep_until_an_exit([running.pid], 60)  # reaped: no such process
    assert time.monotonic() - began < 30


def test_past_a_thousand_open_files_it_still_waits():
    """select.select refuses a descriptor past FD_SETSIZE (1024); a harness may hold that many files."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        pytest.skip(f"the open-file limit is {soft}")
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    short = subprocess.Popen(["sleep", "0.1"])
    try:
        sleep_until_an_exit([short.pid], 60)
        assert short.wait(timeout=30) == 0
    finally:
        for fd in held:
            os.close(fd)


def a_start(tmp_path, script: str, workers: int = 2):
    """`workers` copies of `sh -c script` as one start (the first to make {work_dir}/first goes its own way)."""
    design = Design(name="pair", store=StoreSpec(kind="jsonl", path="{work_dir}/r.jsonl"),
                    command_template=("sh", "-c", script))
    launch = Launch(base_url="http://127.0.0.1:9", work_dir=str(tmp_path), lease_s=1.0)
    return spawn(design, launch, 0, workers=workers)


def test_a_start_waits_for_its_last_worker_asleep_not_waking_every_few_milliseconds(tmp_path):
    """One worker exits at once, the other runs on: the wait sleeps until its timeout on the running one (before,
    it looked 200 times a second; a pid that exited must not stay watched, or every wake-up would be at once)."""
    start = a_start(tmp_path, f"mkdir {tmp_path}/first 2>/dev/null && exit 0; sleep 60")
    try:
        time.sleep(0.5)  # the first worker has exited
        before = resource.getrusage(resource.RUSAGE_THREAD)
        with pytest.raises(subprocess.TimeoutExpired):
            start.wait(1.5)
        after = resource.getrusage(resource.RUSAGE_THREAD)
        woken = after.ru_nvcsw - before.ru_nvcsw
        cpu_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        assert woken < 50, woken  # a 5 ms poll: about 300
        assert cpu_s < 0.5, cpu_s  # nor a loop that never sleeps (about 1.5 s)
    finally:
        start.kill()


def test_a_worker_that_dies_of_sigkill_takes_its_start_down_at_once(tmp_path):
    start = a_start(tmp_path, f"mkdir {tmp_path}/first 2>/dev/null && kill -9 $$; sleep 60")
    began = time.monotonic()
    assert start.wait(60) == -signal.SIGKILL
    assert time.monotonic() - began < 30
    assert all(worker.process.poll() is not None for worker in start.workers)
