"""Mount the power-loss file system over a directory, cut the power, and unmount: the harness's handle.

`with PowerLossMount(work_dir) as mount:` moves nothing: the directory's files become the backing
directory's (a sibling temporary directory), and `work_dir` itself becomes the FUSE mount point the
design sees. `mount.lose()` is a power cut: every process using the mount must be dead first (the
caller SIGKILLs the start); what no fsync covered is gone, and the answer says what. Leaving the
block unmounts and puts the surviving files back in `work_dir`, so the store is read as usual.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from typing import IO, Any

from killtest.harness import lifeline
from killtest.harness.errors import KilltestError

READY_TIMEOUT_S = 10.0


def unavailable_reason() -> str | None:
    """Why a power-loss mount cannot work on this machine, in one line; None when it can."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse does not exist (FUSE is not available in this kernel or container)"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (apt-get install fuse3)"
    if importlib.util.find_spec("mfusepy") is None:
        return "the Python package mfusepy is not installed (pip install 'killtest[powerloss]')"
    return None


class PowerLossMount:
    """A running killtest.harness.faults.power_loss_fs over one directory."""

    def __init__(self, directory: str) -> None:
        reason = unavailable_reason()
        if reason is not None:
            raise KilltestError(f"a power-loss fault needs a FUSE file system: {reason}")
        self.directory = os.path.realpath(directory)
        self.backing = ""
        self._owned = ""
        self._process: subprocess.Popen | None = None

    def __enter__(self) -> PowerLossMount:
        # Owned like every killtest temp dir, so a harness SIGKILLed mid-run leaves it to the next sweep;
        # the files live one level down, where the design never sees the ownership mark.
        self._owned = lifeline.owned_temp_dir(prefix="killtest-backing-", dir=os.path.dirname(self.directory))
        self.backing = os.path.join(self._owned, "files")
        os.mkdir(self.backing)
        _move_files(self.directory, self.backing)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "killtest.harness.faults.power_loss_fs", self.backing, self.directory],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        lifeline.register(self._process.pid)  # the watchdog ends it if the harness dies
        try:
            first = self._read_line(self._process.stdout)
            if first != "ready":
                raise KilltestError(f"the power-loss file system did not mount over {self.directory}:"
                                    f" {first or self._stderr_tail()}")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def lose(self) -> dict[str, list[str]]:
        """Cut the power: names and bytes no fsync made durable are gone. Returns what was lost."""
        return self._command("lose")

    def would_lose(self) -> dict[str, list[str]]:
        """What a cut now would lose, changing nothing."""
        return self._command("state")

    def _command(self, word: str) -> dict[str, Any]:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(word + "\n")
        self._process.stdin.flush()
        line = self._read_line(self._process.stdout)
        if not line:
            raise KilltestError(f"the power-loss file system stopped: {self._stderr_tail()}")
        return json.loads(line)

    def _read_line(self, stream: IO[str] | None) -> str:
        assert stream is not None
        import selectors

        with selectors.DefaultSelector() as selector:
            selector.register(stream, selectors.EVENT_READ)
            if not selector.select(READY_TIMEOUT_S):
                return ""
        return stream.readline().strip()

    def _stderr_tail(self) -> str:
        if self._process is None or self._process.poll() is None or self._process.stderr is None:
            return "no answer"
        lines = self._process.stderr.read().strip().splitlines()
        return lines[-1] if lines else f"exit status {self._process.returncode}"

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            if self._process.stdin is not None and not self._process.stdin.closed:
                self._process.stdin.close()  # end of input: the file system unmounts itself and exits
            try:
                self._process.wait(timeout=READY_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            for stream in (self._process.stdout, self._process.stderr):
                if stream is not None:
                    stream.close()
        # However it ended, nothing stays mounted: a lazy unmount detaches even a busy mount.
        subprocess.run(["fusermount3", "-u", "-z", self.directory], stderr=subprocess.DEVNULL, check=False)
        if self.backing and os.path.isdir(self.backing):
            _move_files(self.backing, self.directory)
        if self._owned:
            lifeline.remove_dir(self._owned)  # whole, even if Ctrl+C lands in the middle


def _move_files(source: str, target: str) -> None:
    """Every file of `source` into `target`, but for the ownership mark each killtest temp dir keeps."""
    for name in os.listdir(source):
        if name != lifeline.OWNER_FILE:
            shutil.move(os.path.join(source, name), os.path.join(target, name))
