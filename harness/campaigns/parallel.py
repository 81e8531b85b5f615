"""`-j N`: independent jobs in N processes, each with its own site, work dirs and private servers.

A job is a module-level function and its arguments (they travel by pickle to a fresh interpreter:
`spawn`, never `fork`, because the harness runs the site's threads and fork would copy them mid-step).
Each job builds its own stage (killtest.harness.running.orchestrator.stage) inside its process, so no two jobs
share a port, a database or a directory; each job process is a child subreaper, as a pre-forking
harness is, so what a killed start leaves behind is reaped. Their progress lines come back through one queue and are
printed by the caller's thread as they arrive. Every process started here (the jobs, the manager of their queue)
dies with the killtest process that started it (PR_SET_PDEATHSIG), and each job's own watchdog then clears what
the job started: a SIGKILLed `killtest explore -j 2` had left its two jobs exploring on, as orphans, for minutes.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import queue
import signal
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.managers import SyncManager
from typing import Any

from killtest.harness import lifeline


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
    with lifeline.temp_dir(prefix="killtest-jobs-") as scratch:
        manager = SyncManager(ctx=context)
        manager.start(start_manager_process, (os.getpid(), scratch))
        with manager:
            return _run(function, jobs, processes, on_progress, shared, context, manager)


def _run(function: Callable[..., Any], jobs: Sequence[tuple], processes: int,
         on_progress: Callable[[str], None], shared: bool, context: Any, manager: SyncManager) -> list[Any]:
    lines = manager.Queue()
    done = threading.Event()
    printer = threading.Thread(target=_print_lines, args=(lines, on_progress, done), daemon=True)
    printer.start()
    try:
        with ProcessPoolExecutor(max_workers=processes, mp_context=context, initializer=start_job_process,
                                 initargs=(os.getpid(),)) as pool:
            board = (manager.dict(),) if shared else ()
            futures = [pool.submit(function, *job, lines, *board) for job in jobs]
            return [future.result() for future in futures]
    finally:
        done.set()
        printer.join(timeout=2)


PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def start_manager_process(parent: int, scratch: str) -> None:
    """The queue's manager dies with `parent` and makes its socket's folder in `scratch`, a folder `parent`
    owns (killtest.harness.lifeline), so that a killed run leaves no pymp-* folder in /tmp."""
    die_with(parent)
    tempfile.tempdir = scratch


def start_job_process(parent: int) -> None:
    """A job process's first steps: die with `parent`, and reap what its starts leave."""
    die_with(parent)
    become_subreaper()


def die_with(parent: int) -> None:
    """SIGKILL this process when `parent`, the killtest process that started it, dies (its starting thread
    is the caller's, which waits for the jobs); if it is dead already, exit now."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


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
