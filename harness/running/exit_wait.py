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


def sleep_until_an_exit(pids: Iterable[int], timeout_s: float) -> None:
    """Return once one of `pids` (children not reaped yet) has exited, or after `timeout_s`, whichever is first."""
    timeout_s = max(timeout_s, 0.0)
    fds: list[int] = []
    try:
        watch = select.poll()  # not select.select: a harness with a thousand files open has pidfds past FD_SETSIZE
        for pid in pids:
            fds.append(os.pidfd_open(pid))
            watch.register(fds[-1], select.POLLIN)
        watch.poll(timeout_s * 1000)
    except ProcessLookupError:  # gone already: the caller's next look finds it
        pass
    except (AttributeError, OSError):  # no pidfd_open here
        time.sleep(min(timeout_s, POLL_S))
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
