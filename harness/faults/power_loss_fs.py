"""A file system that forgets what was never made durable: the power-loss fault, as LazyFS does it.

SIGKILL tests what a process leaves; the kernel still writes everything the process wrote. A power
cut also loses what sat in the page cache: bytes no fsync covered, and names (a new file, a rename,
an unlink) no fsync of their directory covered. Mounted with FUSE over a run's work dir, this file
system passes every operation through to a backing directory, and keeps beside it the state a power
cut would leave. On the harness's word it rewrites the backing directory to that state, and the
design restarts on what survived.

The model, the one POSIX promises and LazyFS (dsrhaslab/lazyfs) implements:
- a regular file's bytes are durable as of its last fsync or fdatasync, the whole file;
- a name in a directory (a file or directory created, renamed in, or unlinked) is durable once that
  directory is fsynced; until then a power cut takes the new name away and gives the old one back;
- what existed when the file system was mounted is durable.
Hard links, symlinks and special files are refused (ENOSYS): stores do not use them.

Run by the harness as `python -m killtest.harness.faults.power_loss_fs BACKING MOUNTPOINT`. It prints `ready`
once mounted, then reads one command a line on stdin and answers one JSON line on stdout:
`lose` (a power cut: the backing directory becomes the durable state; the answer says what was lost;
every process using the mount must be dead by then), `state` (what a cut would lose now, changing
nothing). End of input unmounts and exits.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import subprocess
import sys
import threading
from typing import Any

from killtest.harness.faults.durable_state import differences, rebuild, snapshot

try:  # the `powerloss` extra; killtest.harness.faults.power_loss names what to install when it is missing
    import mfusepy as fuse
except (ImportError, OSError):  # pragma: no cover - OSError: mfusepy found no libfuse on the machine
    fuse = None

def _locked(method):
    """Every operation and every command takes the one lock: a power cut never splits an operation."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self._mutex:
            return method(self, *args, **kwargs)
    return run


class LossyPassthrough(fuse.Operations if fuse is not None else object):  # type: ignore[misc]
    """Every operation on the backing directory, with the durable state kept beside it."""

    use_ns = True

    def __init__(self, backing: str) -> None:
        self.backing = os.path.realpath(backing)
        self._mutex = threading.Lock()
        self.state = snapshot(self.backing)

    def _full(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    # --- durability: the two operations that make something survive a power cut
    @_locked
    def fsync(self, path: str, datasync: int, fh: int) -> int:
        file_id = self.state.id_of(os.fstat(fh).st_ino)
        with open(self._full(path), "rb") as data:  # fh may be write-only
            self.state.content[file_id] = data.read()
        return 0

    @_locked
    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        full = self._full(path)
        directory_id = self.state.id_of(os.lstat(full).st_ino)
        entries = {}
        for name in os.listdir(full):
            info = os.lstat(os.path.join(full, name))
            entries[name] = (self.state.id_of(info.st_ino), os.path.isdir(os.path.join(full, name)))
        self.state.entries[directory_id] = entries
        return 0

    # --- commands from the harness
    @_locked
    def lose_power(self) -> dict[str, list[str]]:
        lost = differences(self.state, self.backing)
        rebuild(self.state, self.backing)
        self.state = snapshot(self.backing)
        return lost

    @_locked
    def would_lose(self) -> dict[str, list[str]]:
        return differences(self.state, self.backing)

    # --- pass-through
    @_locked
    def getattr(self, path: str, fh: Any = None) -> dict[str, Any]:
        info = os.lstat(self._full(path))
        attributes = {key: getattr(info, key) for key in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size")}
        # use_ns: times in nanoseconds
        return attributes | {"st_atime": info.st_atime_ns, "st_mtime": info.st_mtime_ns, "st_ctime": info.st_ctime_ns}

    @_locked
    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._full(path))]

    @_locked
    def access(self, path: str, amode: int) -> int:
        if not os.access(self._full(path), amode):
            raise OSError(errno.EACCES, "")
        return 0

    @_locked
    def create(self, path: str, mode: int, fi: Any = None) -> int:
        fd = os.open(self._full(path), os.O_RDWR | os.O_CREAT, mode)
        self.state.new_id(os.fstat(fd).st_ino)  # a new file: never the heir of a freed inode's bytes
        return fd

    @_locked
    def open(self, path: str, flags: int) -> int:
        return os.open(self._full(path), flags)

    @_locked
    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    @_locked
    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        return os.pwrite(fh, data, offset)

    @_locked
    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._full(path), length)
        return 0

    @_locked
    def fallocate(self, path: str, mode: int, offset: int, size: int, fh: int) -> int:
        if mode:
            raise OSError(errno.EOPNOTSUPP, "")
        os.posix_fallocate(fh, offset, size)
        return 0

    @_locked
    def flush(self, path: str, fh: int) -> int:
        return 0

    @_locked
    def release(self, path: str, fh: int) -> int:
        os.close(fh)
        return 0

    @_locked
    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._full(path), mode)
        self.state.new_id(os.lstat(self._full(path)).st_ino)
        return 0

    @_locked
    def rmdir(self, path: str) -> int:
        os.rmdir(self._full(path))
        return 0

    @_locked
    def unlink(self, path: str) -> int:
        os.unlink(self._full(path))
        return 0

    @_locked
    def rename(self, old: str, new: str) -> int:
        os.rename(self._full(old), self._full(new))
        return 0

    @_locked
    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._full(path), mode)
        return 0

    @_locked
    def chown(self, path: str, uid: int, gid: int) -> int:
        os.chown(self._full(path), uid, gid)
        return 0

    @_locked
    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        os.utime(self._full(path), ns=times) if times else os.utime(self._full(path))
        return 0

    @_locked
    def statfs(self, path: str) -> dict[str, int]:
        info = os.statvfs(self._full(path))
        return {key: getattr(info, key) for key in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail",
                                                     "f_files", "f_ffree", "f_favail", "f_flag", "f_namemax")}

    def link(self, target: str, source: str) -> int:
        raise OSError(errno.ENOSYS, "hard links are not modelled")

    def symlink(self, target: str, source: str) -> int:
        raise OSError(errno.ENOSYS, "symlinks are not modelled")

    def mknod(self, path: str, mode: int, dev: int) -> int:
        raise OSError(errno.ENOSYS, "special files are not modelled")


def _serve_commands(operations: LossyPassthrough, mountpoint: str) -> None:
    """The harness's commands, one a line on stdin; end of input unmounts, which ends the FUSE loop."""
    for line in sys.stdin:
        command = line.strip()
        if command == "lose":
            answer: dict[str, Any] = operations.lose_power()
        elif command == "state":
            answer = operations.would_lose()
        else:
            answer = {"error": f"unknown command {command!r}; the commands are lose and state"}
        print(json.dumps(answer), flush=True)
    subprocess.run(["fusermount3", "-u", "-z", mountpoint], stderr=subprocess.DEVNULL, check=False)


def main(argv: list[str]) -> int:
    if fuse is None:
        print("error: the power-loss file system needs mfusepy and libfuse 3 (pip install 'killtest[powerloss]';"
              " apt-get install fuse3)", file=sys.stderr)
        return 2
    if len(argv) != 2:
        print("usage: python -m killtest.harness.faults.power_loss_fs BACKING MOUNTPOINT", file=sys.stderr)
        return 2
    backing, mountpoint = (os.path.realpath(path) for path in argv)
    operations = LossyPassthrough(backing)

    class Ready(LossyPassthrough):
        def init(self, path: str) -> None:  # called once the mount is live
            print("ready", flush=True)
            threading.Thread(target=_serve_commands, args=(operations, mountpoint), daemon=True).start()

    operations.__class__ = Ready
    # No kernel caching of names or attributes: after a power cut the next lookup must see the disk.
    fuse.FUSE(operations, mountpoint, foreground=True, nothreads=True, attr_timeout=0, entry_timeout=0,
              negative_timeout=0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
