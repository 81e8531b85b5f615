"""Start a scraper, SIGKILL its process group on schedule, restart it, let the last start finish.

Every start runs in a session (and so a process group) of its own, so one killpg reaches every
process the scraper made. Whatever happens, timeouts and Ctrl+C included, no process outlives the run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable

import psutil

from fixture_site.server import SiteServer
from harness.designs import PROJECT_ROOT, Design, Launch
from harness.errors import KilltestError, ScraperStartError
from harness.history import History
from harness.schedule import AfterDelay, AtLine, AtRequest, KillSchedule, Redeploy
from harness.tracepoint import ENVIRONMENT_VARIABLE
from harness.store import held_leases, stored_records

DEFAULT_TIME_LIMIT_S = 120.0
STDERR_TAIL_LINES = 5


@dataclass(frozen=True)
class RunSettings:
    """What stays the same across the starts of one run."""

    lease_s: float = 3.0
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    # Crawls of the same store after the killed one, each left to finish: a scheduled re-crawl that
    # must rewrite no unchanged record and add no row. Only for designs that take {crawl}.
    recrawls: int = 0


@dataclass
class _Start:
    index: int
    process: subprocess.Popen
    started: float
    stdout_path: str
    stderr_path: str
    crawl: int = 1


def run_kill_test(design: Design, schedule: KillSchedule, site: SiteServer, work_dir: str,
                  settings: RunSettings = RunSettings(),
                  on_progress: Callable[[str], None] = lambda message: None, launcher=None,
                  dsn: str = "") -> History:
    """Kill-test `design` once against `site`; its store goes in `work_dir` (or the database `dsn`).

    Returns the run's history. `launcher`, a harness.prefork.Zygote for this design, forks each start
    instead of executing a new interpreter: the same process behaviour without the start-up cost.
    """
    if settings.recrawls and not design.can_recrawl:
        raise KilltestError(f"design {design.name!r} does not take {{crawl}}, so it cannot be re-crawled")
    launch = Launch(base_url=site.base_url, work_dir=work_dir, lease_s=settings.lease_s, dsn=dsn)
    location = design.store_location(launch)
    history = History()
    site.request_log.clear()
    began = time.monotonic()
    # Designs stamp their writes with time.time(); this turns such a stamp into history time.
    wall_clock_at_start = time.time()
    deadline = began + settings.time_limit_s
    history.add("run_started", 0.0, design=design.name, seed=schedule.seed, kill_points=[p.spec for p in schedule.points],
                base_url=site.base_url, lease_s=settings.lease_s, time_limit_s=settings.time_limit_s,
                products=len(site.catalog.products), full_crawl_requests=site.catalog.full_crawl_requests,
                wall_clock_at_start=wall_clock_at_start, reports_leases=design.reports_leases,
                recrawls=settings.recrawls)
    # Every start the run may make: one per kill point, the one that finishes the crawl, then the re-crawls.
    planned = [(point, 1) for point in [*schedule.points, None]]
    planned += [(None, crawl) for crawl in range(2, 2 + settings.recrawls)]
    starts: list[_Start] = []
    outcome = "completed"
    current: _Start | None = None
    crawl_done = 0
    try:
        for point, crawl in planned:
            if crawl <= crawl_done:
                continue  # that crawl finished before its kill points ran out
            index = len(starts)
            trigger = _RequestTrigger(point) if isinstance(point, AtRequest) else None
            if trigger is None:
                site.set_request_hook(None)
            elif point.after_response:
                site.set_request_hook(trigger.count, after_sent=trigger.kill_if_due)
            else:
                site.set_request_hook(trigger.count_and_kill_if_due)
            current = _spawn(design, replace(launch, crawl=crawl), index,
                             point if isinstance(point, AtLine) else None, launcher)
            if trigger is not None:
                trigger.process_group = current.process.pid
            starts.append(current)
            history.add("process_started", current.started - began, start=index, pid=current.process.pid, crawl=crawl)
            what = "runs to the end" if point is None else f"kill at {point.spec}"
            on_progress(f"start {index + 1}/{len(planned)}{f' (re-crawl {crawl - 1})' if crawl > 1 else ''}, {what}")
            timed = isinstance(point, (AfterDelay, Redeploy))
            remaining_s = max(0.0, deadline - current.started)
            try:
                returncode = current.process.wait(timeout=min(point.delay_s, remaining_s) if timed else remaining_s)
            except subprocess.TimeoutExpired:
                if not timed or time.monotonic() >= deadline:
                    returncode = _kill_group(current)
                    history.add("time_limit", time.monotonic() - began, start=index, returncode=returncode,
                                held_leases=held_leases(design, location))
                    outcome = "timed_out"
                    break
                killed_at = time.monotonic()
                if isinstance(point, Redeploy):
                    returncode, signal_name = _redeploy(current, point.grace_s), "SIGTERM"
                else:
                    returncode, signal_name = _kill_group(current), "SIGKILL"
                history.add("kill", killed_at - began, start=index, signal=signal_name, point=point.spec,
                            returncode=returncode, held_leases=held_leases(design, location))
                current = None
                continue
            finally:
                site.set_request_hook(None)
            _reap_group(current)
            if point is not None and returncode == -signal.SIGKILL:
                # An exact point fired: the site's trigger or the tracer inside the scraper sent the signal.
                fired_at = trigger.fired_at if trigger is not None and trigger.fired_at else time.monotonic()
                history.add("kill", fired_at - began, start=index, signal="SIGKILL", point=point.spec,
                            returncode=returncode, held_leases=held_leases(design, location))
                current = None
                continue
            # What the store still held claimed when the crawl said it was done: leases nobody will finish.
            history.add("process_exited", time.monotonic() - began, start=index, returncode=returncode,
                        held_leases=held_leases(design, location))
            current = None
            if returncode != 0:
                outcome = "crashed"
                history.add("crash", time.monotonic() - began, start=index, returncode=returncode,
                            stderr_tail=_tail(starts[-1].stderr_path))
                break  # an error no restart should paper over
            crawl_done = crawl  # the crawl ended by itself; the next planned crawl, if any, starts afresh
    finally:
        site.set_request_hook(None)
        if current is not None and current.process.returncode is None:
            _kill_group(current)
    ended = time.monotonic()
    _add_requests(history, site, starts, began)
    _add_scraper_events(history, starts, began)
    _add_store_records(history, design, location, wall_clock_at_start, ended - began)
    history.add("run_finished", ended - began, outcome=outcome, wall_s=round(ended - began, 4))
    history = history.sorted()
    first_crash = history.first("crash")
    if first_crash is not None and first_crash["start"] == 0 and not history.of_type("request"):
        last_line = (first_crash["stderr_tail"] or ["(no output)"])[-1]
        raise ScraperStartError(f"design {design.name!r} exited with status {first_crash['returncode']}"
                                f" before its first request: {last_line}")
    return history


class _RequestTrigger:
    """Called by the site's threads: SIGKILLs the start's group at its `index`-th request, before or after the answer."""

    def __init__(self, point: AtRequest) -> None:
        self.index = point.index
        self.process_group: int | None = None
        self.fired_at: float | None = None
        self._seen = 0
        self._fired = False
        self._lock = threading.Lock()

    def count(self, path: str) -> None:
        with self._lock:
            self._seen += 1

    def count_and_kill_if_due(self, path: str) -> None:
        self.count(path)
        self.kill_if_due(path)

    def kill_if_due(self, path: str) -> None:
        with self._lock:
            if self._fired or self._seen != self.index or self.process_group is None:
                return
            self._fired = True
            self.fired_at = time.monotonic()
        try:
            os.killpg(self.process_group, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _spawn(design: Design, launch: Launch, index: int, kill_at_line: AtLine | None = None,
           launcher=None) -> _Start:
    stdout_path = os.path.join(launch.work_dir, f"start-{index:03d}.out")
    stderr_path = os.path.join(launch.work_dir, f"start-{index:03d}.err")
    if launcher is not None:
        kill_at = None
        if kill_at_line is not None:
            kill_at = (os.path.join(PROJECT_ROOT, kill_at_line.path), kill_at_line.line, kill_at_line.hit)
        process = launcher.spawn(design.arguments(launch), stdout_path, stderr_path, kill_at)
        return _Start(index, process, time.monotonic(), stdout_path, stderr_path, launch.crawl)
    # Files, not pipes: a killed scraper can never block on a full pipe, and nothing needs a reader thread.
    with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
        extra_env = {}
        if kill_at_line is not None:
            where = os.path.join(PROJECT_ROOT, kill_at_line.path)
            extra_env[ENVIRONMENT_VARIABLE] = f"{where}:{kill_at_line.line}:{kill_at_line.hit}"
        try:
            process = subprocess.Popen(design.command(launch, traced=kill_at_line is not None),
                                       stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                       env=design.environment(launch, **extra_env), cwd=design.spec_dir,
                                       start_new_session=True)
        except OSError as error:
            raise ScraperStartError(f"design {design.name!r}: cannot start {design.command(launch)[0]!r}:"
                                    f" {error.strerror}") from None
    return _Start(index, process, time.monotonic(), stdout_path, stderr_path, launch.crawl)


def _redeploy(start: _Start, grace_s: float) -> int:
    """SIGTERM the start's group, as a platform does on a redeploy; SIGKILL it when the grace period ends."""
    try:
        os.killpg(start.process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        returncode = start.process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        return _kill_group(start)
    _reap_group(start)
    return returncode


def _kill_group(start: _Start) -> int:
    """SIGKILL the start's whole process group and reap it; the exit status as the kernel gave it."""
    try:
        os.killpg(start.process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    returncode = start.process.wait()
    _reap_group(start)
    return returncode


def _reap_group(start: _Start, patience_s: float = 2.0) -> None:
    """Make sure no member of the start's process group survives, children it left behind included."""
    until = time.monotonic() + patience_s
    while True:
        try:
            os.killpg(start.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        _reap_orphans_in(start.process.pid)
        if time.monotonic() > until:
            raise RuntimeError(f"process group {start.process.pid} survived SIGKILL for {patience_s}s")
        time.sleep(0.005)


def _reap_orphans_in(group: int) -> None:
    """Reap the dead members of `group` that were handed to this process.

    A harness that pre-forks is a child subreaper (harness.prefork), so what a killed start left
    behind becomes our child when it dies; as a zombie it would keep the group alive.
    """
    for child in psutil.Process().children():
        try:
            if child.status() == psutil.STATUS_ZOMBIE and os.getpgid(child.pid) == group:
                os.waitpid(child.pid, os.WNOHANG)
        except (psutil.Error, ProcessLookupError, ChildProcessError):
            pass  # gone already, or not ours to reap


def _add_requests(history: History, site: SiteServer, starts: list[_Start], began: float) -> None:
    """Each request the site served, credited to the start that was running when it arrived."""
    start_times = [s.started for s in starts]
    for served in site.request_log.snapshot():
        start = max((i for i, t in enumerate(start_times) if t <= served.t), default=None)
        history.add("request", served.t - began, path=served.path, status=served.status, start=start)


def _add_scraper_events(history: History, starts: list[_Start], began: float) -> None:
    """The JSON lines a scraper printed about itself (ready, lease waits); other output is ignored."""
    for start in starts:
        with open(start.stdout_path, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue  # a line cut short by SIGKILL, or a design's own chatter
                if isinstance(event, dict) and isinstance(event.get("t"), (int, float)) and "event" in event:
                    fields = {k: v for k, v in event.items() if k not in ("t", "event", "type", "start")}
                    history.add("scraper_event", event["t"] - began, start=start.index, name=event["event"], **fields)


def _add_store_records(history: History, design: Design, location: str, wall_clock_at_start: float,
                       read_at: float) -> None:
    """Every record as the store holds it after the last start, timed by the design's own stamps if it has them."""
    def history_time(stamp: float | None) -> float | None:
        return None if stamp is None else round(min(read_at, stamp - wall_clock_at_start), 6)

    for record in stored_records(design, location):
        written = history_time(record.written_at)
        history.add("store_record", read_at if written is None else written, key=record.key, fields=record.fields,
                    stamped=written is not None, changed_t=history_time(record.changed_at),
                    **({"unreadable": record.unreadable} if record.key is None else {}))


def _tail(path: str) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as src:
        return [line.rstrip() for line in src.readlines()[-STDERR_TAIL_LINES:]]
