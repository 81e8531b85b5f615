"""`make test`'s two steps, run side by side (docs/reference/tests.md, "How it runs").

The tests that share the cores run under pytest-xdist, six workers, in the background (SCHED_IDLE: a core only
when no normal process wants it): they are CPU-bound on two cores and none of their verdicts depends on the
machine's load. Six, not four, on two cores: with the foreground's work taking its cores first, four left a
fifth of the cores idle through the step (tests waiting on sleeps, leases and servers); six fill them
(docs/reference/tests.md). The `serial` ones (pauses past a lease,
redeploys, interrupts: timing-sensitive, but mostly asleep) run beside them at normal priority, two at a time,
so the scheduler gives them a core the moment they wake while the rest soak up what is left. Before, the
serial step ran after the other one, on a machine three quarters idle, for 52 s of CI's minutes.

That needs priority to reach every process, and with the kernel's autogroup on it does not (each session is
scheduled as a group of its own, at nice 0): there the two steps run one after the other, as they did before.
CI turns autogroup off for its run (.ci/run).

The serial step's output is kept in a temporary file and printed once both steps have ended, so the two never
interleave. Ctrl-C reaches both (they share the terminal's process group); the exit status is non-zero if
either step failed. With KILLTEST_CI_PHASES set (.ci/run sets it), each step's start, end, exit status and CPU
seconds (user + sys of the processes it waited for) are a row of CI's phase table (.ci/phases.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

# What each step runs: the markers are pyproject.toml's; `hosts` is a step of its own in .ci/run.
REST = ["-n", "6", "--dist", "worksteal", "--durations=15", "-m", "not serial and not hosts"]
SERIAL = ["-n", "2", "--durations=5", "-m", "serial and not hosts"]
REST_NICENESS = 10  # kept where SCHED_IDLE cannot be set (below)
AUTOGROUP = "/proc/sys/kernel/sched_autogroup_enabled"


def priority_spans_sessions() -> bool:
    """Whether niceness orders every process here. With the kernel's autogroup on, the scheduler shares the cores
    between sessions first, each new one at nice 0, and every scraper, browser and server a test starts leads a
    session of its own: the rest's policy would not keep them off the serial tests' cores. CI turns it off."""
    try:
        with open(AUTOGROUP, encoding="ascii") as enabled:
            return enabled.read().strip() != "1"
    except OSError:
        return True  # no autogroup in this kernel


def in_the_background() -> None:
    """The rest's scheduling, set in its process before pytest starts and inherited by every process it starts:
    SCHED_IDLE (sched(7)), so it runs only on a core no normal process wants, and a woken serial test (or
    `make killtest` beside it in CI) preempts it at once. At nice 10 instead, a woken nice-0 process still waited
    for the running nice-10 one's time slice: beside four nice-10 CPU hogs the naive control crawled at 45
    requests/s, beside four SCHED_IDLE ones at 128, alone at 140 (docs/reference/tests.md). nice 10 as well, which
    is what is left where the policy cannot be set."""
    os.nice(REST_NICENESS)
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        pass


def waited(*steps: tuple[str, subprocess.Popen], began: float) -> list[int]:
    """Each step's exit status, once all have ended, in the order given. Each step's row of CI's phase table is
    written when it ends (KILLTEST_CI_PHASES): wait4's rusage is the CPU of its processes that were waited for, the
    xdist workers and their tests' included."""
    named = {process.pid: (step, process) for step, process in steps}
    while any(process.returncode is None for _, process in named.values()):
        pid, status, usage = os.wait4(-1, 0)
        if pid not in named:
            continue
        step, process = named[pid]
        process.returncode = os.waitstatus_to_exitcode(status)
        path = os.environ.get("KILLTEST_CI_PHASES")
        if path:
            with open(path, "a", encoding="utf-8") as out:
                out.write(json.dumps({"step": f"make test: {step}", "start": round(began, 2),
                                      "end": round(time.time(), 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
                                      "status": process.returncode}) + "\n")
    return [process.returncode for _, process in steps]


def in_series(pytest: list[str], env: dict[str, str]) -> tuple[int, int]:
    """The rest, then the serial tests: where priority does not reach every process."""
    print("make test: the kernel's autogroup is on (priority does not reach the tests' sessions): the serial"
          " tests run after the rest", flush=True)
    [rest] = waited(("xdist step", subprocess.Popen(pytest + REST, env=env)), began=time.time())
    [serial] = waited(("serial step", subprocess.Popen(pytest + SERIAL, env=env)), began=time.time())
    return rest, serial


def side_by_side(pytest: list[str], env: dict[str, str]) -> tuple[int, int]:
    """The rest in the background (SCHED_IDLE) and the serial tests at normal priority, at once; the serial step's
    output after."""
    print("make test: the serial tests run beside the rest at normal priority; their output follows the rest's",
          flush=True)
    with tempfile.TemporaryFile("w+", encoding="utf-8") as serial_log:
        began = time.time()
        serial = subprocess.Popen(pytest + SERIAL, env=env, stdout=serial_log, stderr=subprocess.STDOUT)
        rest = subprocess.Popen(pytest + REST, env=env, preexec_fn=in_the_background)
        try:
            rest_status, serial_status = waited(("xdist step", rest), ("serial step (beside it)", serial), began=began)
            statuses = rest_status, serial_status
        finally:  # on Ctrl-C both got the SIGINT too: let them end their sessions, then say what ran
            rest.wait()
            serial.wait()
            serial_log.seek(0)
            print("\n======== the serial step (run beside the rest) ========", flush=True)
            sys.stdout.write(serial_log.read())
    return statuses


def rewrite_cache_is_cold(tests: str = os.path.dirname(os.path.abspath(__file__))) -> bool:
    """Whether some test module has no assertion-rewritten bytecode of pytest's that pytest would take, as in a fresh
    clone. Read as pytest reads it (_pytest/assertion/rewrite.py, _read_pyc): a checked-hash pyc (PEP 552), the
    interpreter's magic number, flags 3 and the first 8 bytes of the source's hash; never its time stamp."""
    import importlib.util

    import pytest

    tag = f"{sys.implementation.cache_tag}-pytest-{pytest.__version__}"
    for name in os.listdir(tests):
        if name.startswith("test_") and name.endswith(".py"):
            try:
                with open(os.path.join(tests, "__pycache__", f"{name[:-3]}.{tag}.pyc"), "rb") as cached:
                    head = cached.read(16)
                with open(os.path.join(tests, name), "rb") as source:
                    source_hash = importlib.util.source_hash(source.read())
            except OSError:
                return True
            if head != importlib.util.MAGIC_NUMBER + b"\x03\x00\x00\x00" + source_hash[:8]:
                return True
    return False


def warm_the_rewrite_cache(pytest: list[str], env: dict[str, str]) -> None:
    """One collection first where pytest's assertion-rewrite cache is cold. Each of make test's pytest processes
    that collects (six xdist workers and the serial step's two) rewrites the asserts of 385 modules (the tests,
    and the killtest, hypothesis and xdist plugins' packages) unless a cached rewrite is there: 7.4 CPU-s cold
    against 2.6 warm on this machine kind. Eight collections at once from a cold cache took 45.5 and 46.1 CPU-s,
    and with one collection first 31.6 and 29.5 in all (docs/reference/tests.md). Its output is dropped: the steps
    after it collect again and say what is wrong, if anything."""
    if not rewrite_cache_is_cold():
        return
    print("make test: pytest's assertion-rewrite cache is cold (a fresh clone): one collection first", flush=True)
    waited(("warm-up collection", subprocess.Popen(
        pytest + ["--collect-only", "-q", "-p", "no:cacheprovider"], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)), began=time.time())


def main() -> int:
    # Bytecode is cached even where the environment says not to (the Makefile's comment on `test` says why).
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    pytest = [sys.executable, "-m", "pytest"]
    try:
        warm_the_rewrite_cache(pytest, env)
        rest_status, serial_status = (side_by_side if priority_spans_sessions() else in_series)(pytest, env)
    except KeyboardInterrupt:
        return 130
    print(f"make test: the rest exited {rest_status}, the serial step {serial_status}", flush=True)
    return 0 if rest_status == 0 and serial_status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
