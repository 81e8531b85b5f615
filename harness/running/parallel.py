"""`-j N`: independent jobs in N processes, each with its own site, work dirs and private servers.

A job is a module-level function and its arguments (they travel by pickle to a fresh interpreter:
`spawn`, never `fork`, because the harness runs the site's threads and fork would copy them mid-step).
Each job builds its own stage (killtest.harness.running.orchestrator.stage) inside its process, so no two jobs
share a port, a database or a directory; each job process is a child subreaper, as a pre-forking
harness is, so what a killed start leaves behind is reaped. Their progress lines come back through one queue and are
printed by the caller's thread as they arrive.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any


def default_jobs() -> int:
    """The number of cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run_jobs(function: Callable[..., Any], jobs: Sequence[tuple], processes: int,
             on_progress: Callable[[str], None] = lambda message: None, shared: bool = False) -> list[Any]:
    """`function(*job, progress_queue)` for every job, in up to `processes` processes; results in job order.

    `function` puts its progress lines on the queue it is given last. With `shared`, it is also given one
    dict that every job's process reads and writes (after the queue): what one job did that the others may
    skip. An error in a job is raised here.
    """
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        lines = manager.Queue()
        done = threading.Event()
        printer = threading.Thread(target=_print_lines, args=(lines, on_progress, done), daemon=True)
        printer.start()
        try:
            with ProcessPoolExecutor(max_workers=processes, mp_context=context, initializer=become_subreaper) as pool:
                board = (manager.dict(),) if shared else ()
                futures = [pool.submit(function, *job, lines, *board) for job in jobs]
                return [future.result() for future in futures]
        finally:
            done.set()
            printer.join(timeout=2)


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Make this job process the child subreaper of what its starts leave: a shell design's children,
    orphaned by a kill, come back to it to be reaped (killtest.harness.running.processes), not to a PID 1 that
    may never reap them and so keep the start's process group alive."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _print_lines(lines: Any, on_progress: Callable[[str], None], done: threading.Event) -> None:
    while not done.is_set():
        try:
            on_progress(lines.get(timeout=0.1))
        except queue.Empty:
            continue
        except (EOFError, OSError):
            return


def chunks(items: Sequence[Any], parts: int) -> list[list[Any]]:
    """`items` dealt round-robin into at most `parts` non-empty lists (slow and fast points mixed)."""
    dealt: list[list[Any]] = [list(items[i::parts]) for i in range(max(1, parts))]
    return [chunk for chunk in dealt if chunk]
