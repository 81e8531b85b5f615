"""Sleeping until a start's process exits (harness/running/exit_wait.py): woken by the exit, not a timer."""

import os
import subprocess
import time

from killtest.harness.running.exit_wait import sleep_until_an_exit


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
