"""A pre-forked launcher: one process imports a Python design once, then forks a fresh start per request.

Fuzzing spends most of its time on start-up (interpreter and `import requests`, about 0.2 s a start
here); a fork of a process that has already imported the design costs a few milliseconds. Each start
is still a real process in a session of its own, SIGKILLed on its process group: the zygote forks a
helper that forks the start and exits at once, so the start is orphaned and handed to the harness,
which has made itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER). The harness then reaps the
start itself and reads the exit status the kernel reports, -9 for SIGKILL, as with subprocess.

    python -m killtest.harness.running.prefork MODULE      (driven by Zygote below; one JSON request a line on stdin)
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import runpy
import signal
import subprocess
import sys
import traceback

from killtest.harness import lifeline
from killtest.harness.design.model import Design
from killtest.harness.running.exit_wait import readable

PR_SET_CHILD_SUBREAPER = 36


class ForkedProcess:
    """A start forked by the zygote and reaped by this process: the parts of Popen the runner uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = os.pidfd_open(pid)

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not readable([self._pidfd], timeout):
                raise subprocess.TimeoutExpired(f"start {self.pid}", timeout or 0.0)
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
            os.close(self._pidfd)
        return self.returncode


class Zygote:
    """The harness's side: start the zygote for `design`, ask it for starts, stop it."""

    def __init__(self, design: Design) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
        if design.module is None:
            raise ValueError(f"design {design.name!r} is not a Python module: it cannot be pre-forked")
        self.design = design
        self._process = subprocess.Popen([sys.executable, "-m", "killtest.harness.running.prefork", design.module],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                         env=design.environment(), start_new_session=True)
        lifeline.register(self._process.pid)
        assert self._process.stdin is not None and self._process.stdout is not None  # both are pipes
        self._requests, self._replies = self._process.stdin, self._process.stdout
        if self._replies.readline().strip() != "ready":
            self.close()
            raise RuntimeError(f"the pre-forked launcher for {design.module!r} did not start")

    def spawn(self, arguments: list[str], stdout_path: str, stderr_path: str,
              kill_at: tuple[str, int, int] | None) -> ForkedProcess:
        request = {"arguments": arguments, "stdout": stdout_path, "stderr": stderr_path, "kill_at": kill_at}
        self._requests.write(json.dumps(request) + "\n")
        self._requests.flush()
        return ForkedProcess(int(self._replies.readline()))

    def close(self) -> None:
        try:
            os.killpg(self._process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._process.wait()

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _run_start(module: str, request: dict) -> None:
    """In the forked start: its own session (at the harness's priority), its own output files, then the design's
    main."""
    os.setsid()
    lifeline.share_priority()  # its new session's group; the zygote's reply comes too late to set it from outside
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    if request["kill_at"]:
        from killtest.harness.faults.tracer import install

        install(*request["kill_at"])
    sys.argv = [module, *request["arguments"]]
    code = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.settrace(None)
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def main() -> None:
    module = sys.argv[1]
    importlib.import_module(module)  # the expensive part, done once
    commands, replies = sys.stdin, sys.stdout
    replies.write("ready\n")
    replies.flush()
    for line in commands:
        request = json.loads(line)
        read_end, write_end = os.pipe()
        helper = os.fork()
        if helper == 0:
            os.close(read_end)
            start = os.fork()
            if start == 0:
                os.close(write_end)
                _run_start(module, request)
            os.write(write_end, f"{start}\n".encode())
            os._exit(0)  # orphans the start, which the harness (a subreaper) inherits
        os.close(write_end)
        with os.fdopen(read_end) as from_helper:
            start_pid = int(from_helper.readline())
        os.waitpid(helper, 0)  # once the helper is gone the start belongs to the harness
        replies.write(f"{start_pid}\n")
        replies.flush()


if __name__ == "__main__":
    main()
