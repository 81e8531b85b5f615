"""Nothing outlives a SIGKILLed killtest: no process after 2 s, and no temporary directory after the next command.

A CI runner's timeout SIGKILLs the harness, which then runs no cleanup of its own; the watchdog
(harness/lifeline.py) kills what it started and removes its directories, and the next command
sweeps what a dead run left. Concurrent campaigns never clean each other up.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import psutil
import pytest

from killtest.harness import lifeline
from killtest.harness.design.model import PROJECT_ROOT
from killtest.harness.servers.common import servers_required
from killtest.harness.servers.private_postgres import PrivatePostgres
from killtest.harness.servers.private_redis import PrivateRedis

# Directories a run makes that name no owner are counted too when they have one of these prefixes.
NOT_YET_OWNED = ("killtest-record-",)
REPORT = os.environ.get("KILLTEST_LIFELINE_REPORT")  # a file to append the before/after lists to


@pytest.fixture(autouse=True)
def _reap_what_a_killed_harness_handed_to_this_process():
    """This test process may be a child subreaper (a pre-forking test made it one: killtest.harness.running.prefork),
    so what a SIGKILLed killtest left behind is handed to it when the watchdog kills it. Reap those
    zombies here, or they would read as leaked processes in every later test."""
    yield
    until = time.monotonic() + 3
    while time.monotonic() < until:
        zombies = [child for child in psutil.Process().children() if child.status() == psutil.STATUS_ZOMBIE]
        for zombie in zombies:
            try:
                os.waitpid(zombie.pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if not zombies:
            return
        time.sleep(0.05)


def killtest(*args):
    return [sys.executable, "-m", "killtest", *args]


def _server_or_skip(server) -> None:
    try:
        server()
    except Exception as missing:
        if servers_required():
            raise
        pytest.skip(str(missing))


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _descendants(process: psutil.Process) -> list[psutil.Process]:
    """A process's descendants, none if it has just ended (a fresh clone's CI: a PostgreSQL backend gone while the
    tree was read, NoSuchProcess out of psutil)."""
    try:
        return process.children(recursive=True)
    except psutil.Error:
        return []


def _a_scraper(process: psutil.Process) -> bool:
    """Alive and running a scraper; an explore start may end between the two questions (then: not one). strace,
    which explore's recording runs a start under, names the scraper in its own command line: not one either (it
    and its scraper counted as two, the test took a recording's one start for mid-run and saw it end)."""
    try:
        return _alive(process) and process.name() != "strace" and "scrapers." in " ".join(process.cmdline())
    except psutil.NoSuchProcess:
        return False


def _a_job(process) -> bool:
    try:
        return "spawn_main" in " ".join(process.cmdline())
    except psutil.Error:
        return False


def _ancestors(process) -> list:
    try:
        return process.parents()
    except psutil.Error:
        return []


def _describe(processes) -> list[str]:
    described = []
    for p in processes:
        try:
            described.append(f"{p.pid} {p.username()} {' '.join(p.cmdline())[:110]}")
        except psutil.Error:
            described.append(f"{p.pid} (gone)")
    return described


def _killtest_dirs(*roots) -> set[str]:
    return {os.path.join(root, n) for root in roots for n in os.listdir(root) if n.startswith("killtest-")}


@pytest.mark.serial  # timing-sensitive: failed under load (make test runs it after the rest, beside one other at most)
@pytest.mark.parametrize("design, server, command", [
    ("idempotent", None, "run"), ("idempotent-pg", PrivatePostgres, "run"), ("queue-bullmq", PrivateRedis, "run"),
    ("idempotent", None, "explore"),  # explore pre-forks: the zygote and its orphaned starts too
    ("idempotent", None, "explore -j 2"),  # two job processes and their queue's manager (they had explored on)
])
@pytest.mark.slow
def test_sigkill_of_killtest_mid_run_leaves_no_process_and_no_temp_dir(design, server, command, tmp_path):
    if server is not None:
        _server_or_skip(server)
    work = tmp_path / "work"
    work.mkdir()
    tmp = tempfile.gettempdir()
    dirs_before_run = _killtest_dirs(tmp)
    command, *options = command.split()
    options += ["--workers", "2", "--runs", "20", "--no-plot"] if command == "run" else []
    harness = subprocess.Popen(killtest(command, "--design", design, *options,
                                        "--out", str(tmp_path / "out"), "--work-dir", str(work)),
                               cwd=PROJECT_ROOT, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        wanted = 2
        while True:  # mid-run: both workers of a start are crawling (explore: a start and the zygote)
            tree = psutil.Process(harness.pid).children(recursive=True)
            scrapers = [p for p in tree if _a_scraper(p)]
            if "-j" in options:  # the scrapers that count are the job processes' (the first recordings are not)
                scrapers = [p for p in scrapers if any(_a_job(a) for a in _ancestors(p))]
            if len(scrapers) >= wanted:
                break
            assert harness.poll() is None and time.monotonic() < deadline, "no scraper started in time"
            time.sleep(0.05)
        # Everything the harness started, however deep, and the watchdog beside it.
        started = [p for p in psutil.Process(harness.pid).children(recursive=True) if _alive(p)]
        assert harness.poll() is None
        if server is PrivatePostgres:
            started += [c for p in started for c in _descendants(p) if c not in started]
        # This harness's directories (other campaigns may be running beside the test: make test's serial step
        # runs two at a time), and any that names no owner but has a prefix a run makes (NOT_YET_OWNED: were
        # one made without killtest.harness.lifeline); a live peer's, which names its owner, is not counted.
        dirs = {d for d in _killtest_dirs(tmp, str(work)) - dirs_before_run
                if (lifeline.owner_of(d) or (0,))[0] == harness.pid or d.startswith(str(work))
                or (os.path.basename(d).startswith(NOT_YET_OWNED) and lifeline.owner_of(d) is None)}
        before = _describe(started)
        harness.kill()
        harness.wait()
        killed_at = time.monotonic()
    finally:
        if harness.poll() is None:
            harness.kill()
    time.sleep(2.0)
    left = [p for p in started if _alive(p)]
    dirs_left = {d for d in dirs if os.path.exists(d)}
    # The next command sweeps whatever a dead run left, even had its watchdog died too.
    subprocess.run(killtest("run", "--design", "nope", "--work-dir", str(work)), cwd=PROJECT_ROOT,
                   capture_output=True, timeout=60)
    dirs_after_next = {d for d in dirs if os.path.exists(d)}
    if REPORT:
        with open(REPORT, "a", encoding="utf-8") as out:
            out.write(json.dumps({"design": design, "command": command, "processes_before": before,
                                  "dirs_before": sorted(dirs),
                                  "processes_after_2s": _describe(left), "dirs_after_2s": sorted(dirs_left),
                                  "dirs_after_next_command": sorted(dirs_after_next),
                                  "waited_s": round(time.monotonic() - killed_at, 2)}) + "\n")
    assert len(before) >= 3 and dirs  # two workers and the watchdog at least; a run dir at least
    assert _describe(left) == []
    assert dirs_after_next == set()


def test_the_sweep_removes_only_the_directories_of_dead_owners(tmp_path):
    mine = lifeline.owned_temp_dir(dir=str(tmp_path))
    dead_owner = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_owner.wait()
    dead = tmp_path / "killtest-dead"
    dead.mkdir()
    (dead / lifeline.OWNER_FILE).write_text(f"{dead_owner.pid} 12345.0\n")
    reused = tmp_path / "killtest-reused"  # a live pid, but another process than the one that wrote it
    reused.mkdir()
    (reused / lifeline.OWNER_FILE).write_text(f"{os.getpid()} 1.0\n")
    unowned = tmp_path / "killtest-unowned"  # no owner file: not ours to judge (perhaps being made now)
    unowned.mkdir()
    removed = lifeline.sweep_dead_temp_dirs([str(tmp_path)])
    assert sorted(removed) == sorted([str(dead), str(reused)])
    assert os.path.isdir(mine) and unowned.is_dir()


# Killed between making its directory and writing the owner file: the process opens the file, and dies there.
DIES_BEFORE_NAMING_ITSELF = """
import builtins, os, signal, sys
from killtest.harness import lifeline
real_open = builtins.open
def dying_open(path, *args, **kwargs):
    if str(path).endswith(lifeline.OWNER_FILE):
        os.kill(os.getpid(), signal.SIGKILL)
    return real_open(path, *args, **kwargs)
builtins.open = dying_open
lifeline.owned_temp_dir(prefix="killtest-explore-", dir=sys.argv[1])
"""


def test_a_process_sigkilled_before_its_dir_names_its_owner_leaves_a_dir_the_next_sweep_removes(tmp_path):
    """A job process of `explore -j 2`, killed by the watchdog in that instant, left such a directory in CI."""
    killed = subprocess.run([sys.executable, "-c", DIES_BEFORE_NAMING_ITSELF, str(tmp_path)], timeout=60)
    assert killed.returncode == -signal.SIGKILL
    [left] = [p for p in tmp_path.iterdir() if p.name.startswith("killtest-explore-")]
    assert not (left / lifeline.OWNER_FILE).exists()
    mine = lifeline.owned_temp_dir(prefix="killtest-explore-", dir=str(tmp_path))  # a live owner's, named alike
    assert lifeline.sweep_dead_temp_dirs([str(tmp_path)]) == [str(left)]
    assert os.path.isdir(mine) and lifeline.owner_of(mine) == lifeline.identity(os.getpid())


# Stepped 2 s: psutil's create_time is a process's start in ticks since boot plus the boot time the wall clock
# implies (/proc/stat's btime), which moves when the clock is stepped (a virtual machine resumed from a snapshot,
# a manual `date -s`). Owners compared that way looked dead after a step, and every killtest command's sweep would
# remove a live campaign's temporary directory under it. Stepped here as psutil sees it.
@pytest.mark.parametrize("clock_step_s", [0.0, 2.0], ids=["steady clock", "stepped clock"])
def test_two_live_campaigns_never_sweep_each_other(tmp_path, monkeypatch, clock_step_s):
    other = subprocess.Popen([sys.executable, "-c", "import time;"
                              " from killtest.harness import lifeline;"
                              f" print(lifeline.owned_temp_dir(dir={str(tmp_path)!r}), flush=True); time.sleep(300)"],
                             cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None
        theirs = other.stdout.readline().strip()
        mine = lifeline.owned_temp_dir(dir=str(tmp_path))
        booted = psutil.boot_time()
        monkeypatch.setattr(psutil._pslinux, "boot_time", lambda: booted + clock_step_s)
        assert lifeline.sweep_dead_temp_dirs([str(tmp_path)]) == []
        assert os.path.isdir(theirs) and os.path.isdir(mine)
    finally:
        other.kill()
        other.wait()
    assert lifeline.sweep_dead_temp_dirs([str(tmp_path)]) == [theirs]  # and a dead one is still found dead


@pytest.mark.slow
def test_an_interrupt_in_the_middle_of_removing_a_temp_dir_still_removes_it_whole(tmp_path):
    """Ctrl+C or SIGTERM raises KeyboardInterrupt wherever the harness is, the middle of a run's cleanup
    included: a plain rmtree stopped there left the run's directory half removed (seen once in make test,
    after a SIGTERM to a campaign). A real timer signal lands 1 ms into removing 30,000 files."""
    path = lifeline.owned_temp_dir(dir=str(tmp_path))
    files = 30_000
    for n in range(files):
        open(os.path.join(path, f"f{n}"), "w").close()

    def interrupt(signum, frame):
        try:
            untouched = len(os.listdir(path)) == files
        except FileNotFoundError:
            untouched = False
        if untouched:  # the timer ran out before the removal began (a loaded machine): once more, 1 ms on.
            signal.setitimer(signal.ITIMER_REAL, 0.001)  # Raised here, it crashed an xdist worker in a CI run.
            return
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.001)
        with pytest.raises(KeyboardInterrupt):  # the interrupt still reaches the caller, once the dir is gone
            lifeline.remove_dir(path)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not os.path.exists(path)


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="this kernel has no autogroup")
def test_a_session_the_harness_starts_runs_at_the_harness_niceness_under_autogroup():
    """A start leads a session of its own, and with autogroup the kernel schedules sessions as groups, each new
    one at nice 0: `nice killtest` left its starts at full priority. Registered, the session's group takes the
    harness's niceness, whether the harness started it (register) or it called setsid itself (prefork's start)."""
    program = (
        "import os, subprocess, sys\n"
        "from killtest.harness import lifeline\n"
        # the kernel prints nothing for the root group (a session that never called setsid since boot, as
        # a container's first process may be): its niceness is then the word 'root', not the last word
        "def nice_of(pid): return (open(f'/proc/{pid}/autogroup').read().split() or ['root'])[-1]\n"
        "child = subprocess.Popen(['sleep', '30'], start_new_session=True)\n"
        "lifeline.share_priority(child.pid)\n"  # what register does, without a watchdog to start and stop
        "group = nice_of(child.pid)\n"
        "child.kill(); child.wait()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.setsid(); lifeline.share_priority()\n"  # prefork's start, in its new session
        "    print(nice_of('self'), flush=True); os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "print(group, nice_of('self'))\n"
    )
    done = subprocess.run(["nice", "-n", "7", sys.executable, "-c", program], capture_output=True, text=True,
                          cwd=PROJECT_ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    forked, registered = done.stdout.split("\n")[0], done.stdout.split("\n")[1]
    niceness = str(min(19, os.getpriority(os.PRIO_PROCESS, 0) + 7))  # `nice -n 7` adds to this test's own
    assert forked == niceness
    assert registered.split()[0] == niceness  # the new session's group, at the harness's niceness
    # the harness's own group is left as it was (the shell's; nice does not change a group)
    assert registered.split()[1] == (open("/proc/self/autogroup").read().split() or ["root"])[-1]
