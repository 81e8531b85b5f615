"""The disk model: what an fsync costs on the machine a run pretends to be, as a delay strace adds.

This VM flushes in tens of microseconds (an fdatasync measured at 35 µs, 0.6-2.9 ms when the disk is
shared); the article's machine, and most machines a scraper runs on, pay milliseconds. A design's
cost per durable commit decides how fast it crawls, so the model makes every flush of the design's
own processes (and of the private PostgreSQL and Redis servers, harness/servers/) take as long as the
profile says, black-box, in any language:

    strace -f --seccomp-bpf -qq -o /dev/null -e trace=<flushes> -e inject=fdatasync:delay_exit=<µs> ... CMD

Why strace and not the FUSE file system of harness/faults/power_loss_fs.py: under `--seccomp-bpf` only
the flushes stop in the tracer (a kernel filter lets every other system call through), so the cost
when on is a ptrace stop per flush, and when off there is no strace at all. The FUSE mount would put
every read and write of the store through a Python process (a run with the mount is about 0.2 s
slower on a six-product catalog, docs/explanation/power-loss.md). `delay_exit` (strace(1), --inject)
delays the tracee after the flush returns: the flush itself still happens.

The profiles' figures, each from its published source:
- `nvme`: an enterprise NVMe drive with power-loss protection acknowledges a flush from its capacitor-
  backed cache in tens of microseconds (Tanel Poder, "Using Postgres pg_test_fsync tool for testing low
  latency writes", 2025-05-27, tanelpoder.com: "instead of tens of microseconds"): 50 µs.
- `consumer-ssd`: the same post's Samsung 990 Pro (no power-loss protection, a write-back cache that a
  flush must empty): fdatasync 1,643 µs, fsync 5,636 µs a call (pg_test_fsync, one 8 kB write).
- `cloud-volume`: Amazon EBS io2 Block Express, "an average latency of under 500 microseconds for 16KiB
  I/O operations" (Amazon EBS User Guide, "Amazon EBS optimization"); gp2 and gp3 publish no figure
  and are slower: 500 µs, a floor.
- `hdd`: a 7,200 rpm disk commits at most once a revolution, 60 / 7,200 s = 8.3 ms (pgsql-hackers,
  "Analysis of ganged WAL writes", 2002-10-07: "1 trx/process/revolution").
"""

from __future__ import annotations

import ctypes
import os
import shutil
from dataclasses import dataclass

from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import KillPoint, StartOptions

PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> None:
    """Make this process (the harness) the child subreaper of what it starts under the model.

    Under strace a design's processes are strace's children, not the harness's: when a kill takes strace
    and them together, they become orphans, and the init of a container may never reap them, so their
    process group would outlive its SIGKILL as zombies. As a subreaper the harness inherits them, and the
    runner reaps them (running/processes.py `_reap_orphans_in`; servers/common.py `_kill_tree`)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


# Every system call that waits for the disk to make data durable. sync_file_range with its WAIT flags
# does (RocksDB uses it); msync(MS_SYNC) flushes a mapped file (LMDB); syncfs and sync flush everything.
FLUSH_SYSCALLS = ("fsync", "fdatasync", "sync_file_range", "msync", "syncfs", "sync")


@dataclass(frozen=True)
class DiskModel:
    """Seconds each flush system call costs; `name` is the profile's, or `fsync-latency=<s>`."""

    name: str
    fsync_s: float
    fdatasync_s: float  # fdatasync, sync_file_range, msync: data only, no metadata journal commit
    source: str = ""
    count_file: str | None = None  # strace -c writes its count of flushes here (harness/bench/disk_profiles.py)

    @property
    def spec(self) -> str:
        return self.name

    def delays_us(self) -> dict[str, int]:
        """Microseconds strace adds to each flush system call."""
        data = round(self.fdatasync_s * 1e6)
        full = round(self.fsync_s * 1e6)
        return {"fsync": full, "syncfs": full, "sync": full,
                "fdatasync": data, "sync_file_range": data, "msync": data}

    def strace_prefix(self) -> tuple[str, ...]:
        """The program a process runs under so that each of its flushes, and its children's, costs the model's."""
        if shutil.which("strace") is None:
            raise KilltestError(f"the disk model {self.name} needs strace, which is not installed here"
                                " (apt-get install strace)")
        by_delay: dict[int, list[str]] = {}
        for syscall, delay in self.delays_us().items():
            by_delay.setdefault(delay, []).append(syscall)
        injections = [word for delay, calls in sorted(by_delay.items())
                      for word in ("-e", f"inject={','.join(calls)}:delay_exit={delay}")]
        output = ("-c", "-o", self.count_file) if self.count_file else ("-o", "/dev/null")
        return ("strace", "-f", "--seccomp-bpf", "-qq", *output,
                "-e", f"trace={','.join(FLUSH_SYSCALLS)}", *injections, "--")


PROFILES: dict[str, DiskModel] = {model.name: model for model in (
    DiskModel("nvme", 50e-6, 50e-6, "enterprise NVMe with power-loss protection: tens of µs (Tanel Poder, 2025)"),
    DiskModel("consumer-ssd", 5.636e-3, 1.643e-3,
              "Samsung 990 Pro, pg_test_fsync: fdatasync 1,643 µs, fsync 5,636 µs (Tanel Poder, 2025)"),
    DiskModel("cloud-volume", 500e-6, 500e-6, "EBS io2 Block Express: under 500 µs average (Amazon EBS User Guide)"),
    DiskModel("hdd", 8.333e-3, 8.333e-3, "7,200 rpm: one commit a revolution, 8.3 ms (pgsql-hackers, 2002)"),
)}


def disk_model(profile: str | None, fsync_latency_s: float | None) -> DiskModel | None:
    """The model `--disk` and `--fsync-latency` ask for; None when neither is given (no strace at all)."""
    if profile is not None and fsync_latency_s is not None:
        raise KilltestError("give --disk NAME or --fsync-latency SECONDS, not both")
    if fsync_latency_s is not None:
        if fsync_latency_s <= 0:
            return None
        return DiskModel(f"fsync-latency={fsync_latency_s:g}", fsync_latency_s, fsync_latency_s,
                         "every flush system call delayed alike")
    if profile is None or profile == "none":
        return None
    if profile not in PROFILES:
        raise KilltestError(f"--disk takes one of {', '.join(PROFILES)} (or none), not {profile!r}")
    return PROFILES[profile]


def counted_flushes(count_file: str) -> int:
    """How many flush system calls a `strace -c` summary (`count_file`) counted; 0 when strace wrote none."""
    try:
        with open(count_file, encoding="utf-8") as summary:
            rows = [line.split() for line in summary]
    except FileNotFoundError:
        return 0
    return sum(int(row[3] if len(row) == 5 else row[4]) for row in rows
               if row and row[-1] in FLUSH_SYSCALLS and row[0][0].isdigit())


def under_the_disk_model(options: StartOptions | None, disk: DiskModel | None,
                         point: KillPoint | None) -> StartOptions | None:
    """The start's options with the disk model's strace in front; refused with a point that runs the start
    under a program of its own (strace's kill at a write, the store proxy): one process cannot have two tracers."""
    if disk is None:
        return options
    if options is not None and options.command_prefix:
        raise KilltestError(f"kill point {point.spec if point else ''} runs its start under a program of its own,"
                            f" which the disk model {disk.name} cannot trace too: leave out --disk/--fsync-latency")
    adopt_orphans()  # a killed strace's children come back to the harness, which reaps them
    return StartOptions(kill_at_line=options.kill_at_line if options is not None else None,
                        command_prefix=disk.strace_prefix())
