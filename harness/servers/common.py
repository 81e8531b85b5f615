"""What every private server needs: its binaries, a free loopback port, and a way to refuse politely."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import time

import psutil

from killtest.harness import lifeline
from killtest.harness.errors import KilltestError

# CI sets this so that a missing server fails the tests instead of skipping them.
REQUIRE_SERVERS_VARIABLE = "KILLTEST_REQUIRE_SERVERS"


class ServerUnavailable(KilltestError):
    """A server binary is not installed; the message says what to install."""


def find_binary(name: str, debian_globs: tuple[str, ...] = (), install_hint: str = "") -> str:
    """`name` on PATH, or in the usual Debian places (PostgreSQL keeps its server off PATH)."""
    found = shutil.which(name)
    if found:
        return found
    for pattern in debian_globs:
        matches = sorted(glob.glob(pattern), reverse=True)  # the newest version first
        if matches:
            return matches[0]
    raise ServerUnavailable(f"{name} is not installed; {install_hint}")


def free_loopback_port() -> int:
    """A port nothing listens on right now; the server binds it a moment later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def servers_required() -> bool:
    return os.environ.get(REQUIRE_SERVERS_VARIABLE, "") not in ("", "0")


class PrivateServer:
    """What every private server shares: a temporary directory, one process group, a clean stop.

    A subclass sets `name`, prepares its data directory (`_prepare()`), starts its process on
    `self.port` (`_launch()`) and says how to ask whether it is up (`_answers()`); `stop()` ends it
    and removes the directory.
    """

    name = "server"
    # (module, extra): the Python packages the harness talks to the server with, and the extra that brings them
    python_packages: tuple[tuple[str, str], ...] = ()
    start_timeout_s = 30.0
    stop_signal = signal.SIGKILL  # what to send first; SIGKILL follows if it does not stop in time

    def __init__(self) -> None:
        self.port = 0
        self._dir: str | None = None
        self._process: subprocess.Popen | None = None
        # A program the server runs under: the disk model's strace (killtest.harness.faults.disk_model), or nothing.
        self.command_prefix: tuple[str, ...] = ()

    @property
    def directory(self) -> str:
        """The server's temporary directory, once started."""
        if self._dir is None:
            raise KilltestError(f"the private {self.name} has not been started")
        return self._dir

    @property
    def process(self) -> subprocess.Popen:
        """The server's process, once launched."""
        if self._process is None:
            raise KilltestError(f"the private {self.name} is not running")
        return self._process

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self):
        """Start the server in a new temporary directory on a free loopback port; wait until it answers."""
        self._dir = lifeline.owned_temp_dir(prefix=f"killtest-{self.name}-")
        try:
            self._prepare()
            self.port = free_loopback_port()
            self._launch()
            lifeline.register(self.process.pid)
            self._wait_until_ready()
            return self
        except BaseException:
            self.stop()
            raise

    def _prepare(self) -> None:
        """Whatever the data directory needs before the first launch."""

    def fresh_database(self) -> str:
        """A new, empty database for one run; its DSN (the {dsn} a design is given)."""
        raise NotImplementedError

    def _answers(self) -> bool:
        raise NotImplementedError

    def _launch(self) -> None:
        """Start the server process on `self.port` with what is already in `self._dir`."""
        raise NotImplementedError

    def crash_and_restart(self) -> float:
        """SIGKILL the server's whole process group, start it again on the same port and data; seconds it took."""
        began = time.monotonic()
        self._kill_tree()
        self._launch()
        lifeline.register(self.process.pid)
        self._wait_until_ready()
        return time.monotonic() - began

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while not self._answers():
            if self.process.poll() is not None:
                raise KilltestError(f"the private {self.name} exited with status {self.process.returncode}:"
                                    f" {self._log_tail()}")
            if time.monotonic() > deadline:
                raise KilltestError(f"the private {self.name} did not answer in {self.start_timeout_s:g}s:"
                                    f" {self._log_tail()}")
            time.sleep(0.02)

    def _log_tail(self) -> str:
        if self._dir is None:
            return "(no log)"
        try:
            with open(os.path.join(self._dir, f"{self.name}.log"), encoding="utf-8", errors="replace") as log:
                lines = [line.strip() for line in log if line.strip()]
            return lines[-1] if lines else "(no output)"
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            # Under strace the server is strace's child: wait for it too, not only for strace.
            inside = psutil.Process(self._process.pid).children(recursive=True) if self.command_prefix else []
            os.killpg(self._process.pid, self.stop_signal)
            try:
                self._process.wait(timeout=10)
                if psutil.wait_procs(inside, timeout=10)[1]:
                    raise subprocess.TimeoutExpired(self.name, 10)
            except subprocess.TimeoutExpired:
                self._kill_tree()
                for child in inside:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        child.kill()
        self._process = None
        if self._dir is not None:
            lifeline.remove_dir(self._dir)  # whole, even if Ctrl+C lands in the middle
            self._dir = None

    def _kill_tree(self, patience_s: float = 5.0) -> None:
        """SIGKILL the server and every process it started, and reap those handed to this process.

        PostgreSQL's backends put themselves in sessions of their own, so killing the server's group
        misses them; and a harness that is a child subreaper (killtest.harness.running.prefork) inherits them when the
        server dies, so unreaped they would stay as zombies.
        """
        process = self.process
        try:
            descendants = psutil.Process(process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            descendants = []
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        for child in descendants:
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass
        until = time.monotonic() + patience_s
        for child in descendants:
            while time.monotonic() < until:
                try:
                    if child.status() != psutil.STATUS_ZOMBIE:
                        time.sleep(0.005)
                        continue
                    if child.ppid() == os.getpid():
                        os.waitpid(child.pid, 0)
                        break
                    time.sleep(0.005)  # a zombie of another parent: it reaps it, or init does
                except (psutil.NoSuchProcess, ChildProcessError):
                    break

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
