"""Sleeping until a start's process exits, woken by the kernel, not by a timer.

The runner waits for a start in slices (running/start_watch.py); inside a slice it used to look every 5 ms
whether a worker had exited. That is 200 wake-ups a second for every waiting harness, about 1 % of a core each
(0.12 CPU-s for a 10 s wait, measured on this machine kind), and a suite runs several at once, beside the crawls
it measures. A pidfd (pidfd_open(2), Linux 5.3) becomes readable when its process exits, so `poll` sleeps
until an exit or the slice's end, and an exit is seen at once instead of up to 5 ms late.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Iterable

POLL_S = 0.005  # the nap where there is no pidfd (an older kernel, another system)


def readable(fds: Iterable[int], timeout_s: float | None) -> bool:
    """Whether one of `fds` turns readable within `timeout_s` (None: no limit). `poll`, not `select.select`: a harness
    with a thousand files open has descriptors past FD_SETSIZE, which select refuses (ValueError)."""
    watch = select.poll()
    for fd in fds:
        watch.register(fd, select.POLLIN)
    return bool(watch.poll(None if timeout_s is None else max(timeout_s, 0.0) * 1000))


def sleep_until_an_exit(pids: Iterable[int], timeout_s: float) -> None:
    """Return once one of `pids` (children not reaped yet) has exited, or after `timeout_s`, whichever is first."""
    fds: list[int] = []
    try:
        for pid in pids:
            fds.append(os.pidfd_open(pid))  # one at a time: those opened before a failure are closed below
        readable(fds, timeout_s)
    except ProcessLookupError:  # gone already: the caller's next look finds it
        pass
    except (AttributeError, OSError):  # no pidfd_open here
        time.sleep(min(max(timeout_s, 0.0), POLL_S))
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
