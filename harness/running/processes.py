"""One start of a design: one or more worker processes, each in a session (a process group) of its own
and in a cgroup of its own (killtest.harness.cgroups: a box).

They are started, waited for, SIGKILLed or redeployed, and reaped together: whatever happens, no
process of a start outlives it, children it made included, even those that left its process group
(a browser launched detached, a daemon that called setsid): each SIGKILL reaches the worker's box too.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import psutil

from killtest.harness import cgroups, lifeline
from killtest.harness.design.model import Design, Launch
from killtest.harness.errors import KilltestError, ScraperStartError
from killtest.harness.faults.points import StartOptions
from killtest.harness.faults.tracer import ENVIRONMENT_VARIABLE
from killtest.harness.running.exit_wait import sleep_until_an_exit

POLL_S = 0.005
# How long a killed group may take to be gone (zombies aside, see reap_group): a margin for a browser's tree of
# dozens of processes on loaded cores. The 2 s it was looked like too little once, but that was a zombie.
REAP_PATIENCE_S = 10.0
LOOK_S = 0.05  # how often a killed group that is not gone yet is looked at member by member


@dataclass
class Worker:
    process: subprocess.Popen  # or a killtest.harness.running.prefork.ForkedProcess
    stdout_path: str
    stderr_path: str
    door: int | None = None  # the site's door of its start (killtest.fixture_site.doors)
    number: int = 1  # its place among the start's workers, from 1; a restarted worker keeps it
    box: cgroups.Box | None = None  # its cgroup (or its environment mark): every process it made


@dataclass
class Start:
    """The workers of one start, and when it began."""

    index: int
    started: float
    crawl: int = 1
    workers: list[Worker] = field(default_factory=list)
    retired: list[Worker] = field(default_factory=list)  # workers killed alone and started again
    ended: float | None = None  # when the harness saw the last worker gone (time.monotonic())
    door_url: str | None = None  # the site's address through the start's door, which its workers share
    # A worker started again runs under this too (the disk model's strace, killtest.harness.faults.disk_model).
    restart_prefix: tuple[str, ...] = ()

    def worker_of(self, pid: int | None) -> int | None:
        """The number of this start's worker whose process had `pid`, restarted ones included."""
        return next((w.number for w in self.retired + self.workers if w.process.pid == pid), None)

    @property
    def alive_s(self) -> float:
        """How long the start's scraper ran: from its spawn to the harness seeing it gone."""
        return (self.ended if self.ended is not None else time.monotonic()) - self.started

    @property
    def stdout_paths(self) -> list[str]:
        return [w.stdout_path for w in self.retired + self.workers]

    @property
    def pids(self) -> list[int]:
        return [w.process.pid for w in self.workers]

    @property
    def door(self) -> int | None:
        return self.workers[0].door if self.workers else None

    def wait(self, timeout_s: float) -> int:
        """The start's exit status once every worker has exited; TimeoutExpired if they have not by then.

        A worker that dies of SIGKILL (a tracer or the site's trigger fired in it) takes the others with it.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            codes = [_poll(w.process) for w in self.workers]
            finished = [code for code in codes if code is not None]
            if len(finished) == len(codes):
                self.ended = self.ended or time.monotonic()
                return combined(finished)
            if -signal.SIGKILL in codes:
                return self.kill()
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"start {self.index}", timeout_s)
            sleep_until_an_exit([w.process.pid for w, code in zip(self.workers, codes) if code is None],
                                deadline - time.monotonic())

    def kill(self) -> int:
        """SIGKILL every worker's process group and reap them; the exit status as the kernel gave it."""
        self._signal(signal.SIGKILL)
        codes = [w.process.wait() for w in self.workers]
        self.ended = self.ended or time.monotonic()
        self.reap()
        return combined(codes)

    def redeploy(self, grace_s: float) -> int:
        """SIGTERM every worker, as a platform does on a redeploy; SIGKILL them when the grace period ends."""
        self._signal(signal.SIGTERM)
        try:
            return self.wait(grace_s)
        except subprocess.TimeoutExpired:
            return self.kill()
        finally:
            self.reap()

    def reap(self, patience_s: float = REAP_PATIENCE_S) -> int:
        """Make sure no member of any worker's process group or box survives, children left behind
        included; how many processes were still in the boxes (a browser its worker did not close)."""
        for group in self.pids:
            reap_group(group, patience_s)
        return sum(w.box.empty(patience_s) for w in self.workers if w.box is not None)

    def restart_worker(self, number: int, grace_s: float | None, design: Design, launch: Launch,
                       launcher=None) -> tuple[int, int]:
        """Kill worker `number` (1-based) alone, SIGTERM first when `grace_s` is given, and start it again.

        Returns its exit status and the new worker's pid; the other workers go on untouched.
        """
        alone = Start(self.index, self.started, self.crawl, [self.workers[number - 1]])
        returncode = alone.kill() if grace_s is None else alone.redeploy(grace_s)
        base = os.path.join(launch.work_dir, f"start-{self.index:03d}-w{number}-r{len(self.retired) + 1}")
        if self.door_url is not None:  # it joins its start's door, as its fellow workers still use it
            launch = replace(launch, base_url=self.door_url)
        options = StartOptions(command_prefix=self.restart_prefix) if self.restart_prefix else None
        box = cgroups.Box(f"start-{self.index}-w{number}")
        worker = Worker(_spawn_one(design, launch, f"{base}.out", f"{base}.err", options, launcher, box),
                        f"{base}.out", f"{base}.err", self.workers[number - 1].door, number, box)
        self.retired.append(self.workers[number - 1])
        self.workers[number - 1] = worker
        return returncode, worker.process.pid

    def kill_now(self) -> None:
        """SIGKILL every group at once, from any thread (the site's request trigger); the runner reaps."""
        self._signal(signal.SIGKILL)

    @property
    def running(self) -> bool:
        return any(_poll(w.process) is None for w in self.workers)

    def _signal(self, signum: int) -> None:
        for group in self.pids:
            try:
                os.killpg(group, signum)
            except ProcessLookupError:
                pass
        if signum == signal.SIGKILL:  # and whatever left the group: a detached browser, a setsid daemon
            for worker in self.workers:
                if worker.box is not None:
                    worker.box.kill()


def combined(codes: list[int]) -> int:
    """One status for a start: -9 if any worker was SIGKILLed, else the first failure, else 0."""
    if -signal.SIGKILL in codes:
        return -signal.SIGKILL
    return next((code for code in codes if code != 0), 0)


def spawn(design: Design, launch: Launch, index: int, workers: int = 1,
          options: StartOptions | None = None, launcher=None) -> Start:
    """Start `workers` copies of the design, each in its own session, output to files in the work dir.

    `options` is what the start's kill point asks for (killtest.harness.faults.points.StartOptions): a line to
    be killed at, run by killtest.harness.faults.tracer, or a program to run the command under.
    """
    start = Start(index, time.monotonic(), launch.crawl)
    # With several workers the site credits each request to the worker whose process made it
    # (killtest.fixture_site.socket_owner), asking for the pids as they are then: a restarted one is found.
    door, own = through_a_door(launch, (lambda: start.pids) if workers > 1 else None)
    start.door_url = own.base_url if door is not None else None  # every earlier start is dead: theirs stays theirs
    for number in range(workers):
        suffix = f"-w{number + 1}" if workers > 1 else ""
        stdout_path = os.path.join(launch.work_dir, f"start-{index:03d}{suffix}.out")
        stderr_path = os.path.join(launch.work_dir, f"start-{index:03d}{suffix}.err")
        box = cgroups.Box(f"start-{index}-w{number + 1}")
        start.workers.append(Worker(_spawn_one(design, own, stdout_path, stderr_path, options, launcher, box),
                                    stdout_path, stderr_path, door, number + 1, box))
    start.started = time.monotonic()
    return start


def through_a_door(launch: Launch, worker_pids: Callable[[], list[int]] | None = None) -> tuple[int | None, Launch]:
    """The launch for one start: the site through a new door of its own, when the run gives doors."""
    if launch.open_door is None:
        return None, launch
    port, base_url = launch.open_door(worker_pids)
    return port, replace(launch, base_url=base_url)


def _spawn_one(design: Design, launch: Launch, stdout_path: str, stderr_path: str,
               options: StartOptions | None, launcher, box: cgroups.Box):
    kill_at_line = options.kill_at_line if options is not None else None
    prefix = list(options.command_prefix) if options is not None else []
    if launcher is not None and not prefix:
        forked = launcher.spawn(design.arguments(launch), stdout_path, stderr_path, kill_at_line)
        # Moved in after the fork: a pre-forked start is a Python module, which makes no process before
        # its first lines run; it carries no mark (its environment is the zygote's).
        box.enter(forked.pid)
        lifeline.register(forked.pid)
        return forked
    # Files, not pipes: a killed scraper can never block on a full pipe, and nothing needs a reader thread.
    with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
        extra_env = box.environment()
        if launch.temp_dir and "TMPDIR" not in dict(design.env):  # a spec's own TMPDIR wins
            # Python's tempfile, Node's os.tmpdir(), Chromium and Puppeteer all read it.
            extra_env["TMPDIR"] = launch.temp_dir
        if kill_at_line is not None:
            where, line, hit = kill_at_line
            extra_env[ENVIRONMENT_VARIABLE] = f"{where}:{line}:{hit}"
        env = design.environment(launch, **extra_env)
        command = [*prefix, *design.command(launch, traced=kill_at_line is not None)]
        if box.path is not None and not _runnable(command[0], env, design.spec_dir):
            # The shell that enters the box would exit 127; say it as Popen would have said it.
            raise ScraperStartError(f"design {design.name!r}: cannot start {design.command(launch)[0]!r}:"
                                    f" {os.strerror(errno.ENOENT)}")
        try:
            process = subprocess.Popen(box.wrap(command),
                                       stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                       env=env, cwd=design.spec_dir,
                                       start_new_session=True)
            lifeline.register(process.pid)  # it and its session die with the harness, however it dies
            return process
        except OSError as error:
            raise ScraperStartError(f"design {design.name!r}: cannot start {design.command(launch)[0]!r}:"
                                    f" {error.strerror}") from None


def _runnable(program: str, env: dict[str, str], cwd: str) -> bool:
    if os.sep in program:
        return os.access(os.path.join(cwd, program), os.X_OK)
    return shutil.which(program, path=env.get("PATH")) is not None


def _poll(process) -> int | None:
    if isinstance(process, subprocess.Popen):
        return process.poll()
    try:
        return process.wait(timeout=0)  # a ForkedProcess: select on its pidfd
    except subprocess.TimeoutExpired:
        return None


def reap_group(group: int, patience_s: float = REAP_PATIENCE_S) -> None:
    """SIGKILL process group `group` until none of it runs, reaping what was handed to this process.

    A member that is only a zombie is dead: it waits for a parent that is not this process to reap it (a process
    above the harness that is a child subreaper, a pytest worker that pre-forked in an earlier test, got a killed
    scraper's orphaned driver), runs nothing and holds its pid, so the group counts as gone."""
    until = time.monotonic() + patience_s
    look_at = time.monotonic() + LOOK_S
    while True:
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            return
        _reap_orphans_in(group)
        now = time.monotonic()
        if now >= look_at:
            left = _members(group)
            # Only zombies, none of them ours: another process must reap them (a zombie of ours, one handed to us
            # after the reaping above, is reaped on the next turn: returning would leave it behind).
            if all(status == psutil.STATUS_ZOMBIE and parent != os.getpid() for _, status, parent in left):
                return
            if now > until:
                raise KilltestError(f"process group {group} survived SIGKILL for {patience_s:g}s: "
                                    + ", ".join(who for who, _, _ in left))
            look_at = now + LOOK_S
        time.sleep(POLL_S)


def _members(group: int) -> list[tuple[str, str, int]]:
    """What is left of `group`: (who, status, parent pid) for each member, who in words for the line that says
    a kill did not take."""
    left = []
    for process in psutil.process_iter(["pid", "name", "status", "ppid"]):
        try:
            if os.getpgid(process.pid) == group:
                info = process.info
                left.append((f"{info['name']} {info['pid']} ({info['status']}, parent {info['ppid']})",
                             info["status"], info["ppid"]))
        except (ProcessLookupError, psutil.Error):
            continue
    return left


def _reap_orphans_in(group: int) -> None:
    """Reap the dead members of `group` that were handed to this process.

    A harness that pre-forks is a child subreaper (killtest.harness.running.prefork), so what a killed start left
    behind becomes our child when it dies; as a zombie it would keep the group alive.
    """
    for child in psutil.Process().children():
        try:
            if child.status() == psutil.STATUS_ZOMBIE and os.getpgid(child.pid) == group:
                os.waitpid(child.pid, os.WNOHANG)
        except (psutil.Error, ProcessLookupError, ChildProcessError):
            pass  # gone already, or not ours to reap
