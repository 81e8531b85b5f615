"""Start a scraper, SIGKILL it on schedule, restart it, let the last start finish; write the history.

Each start is one or more worker processes (harness.running.processes), each in a process group of its own,
so a kill reaches every process the scraper made. Whatever happens, timeouts and Ctrl+C included,
no process outlives the run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable

from fixture_site.catalog import Drift, changes_between, drifted
from fixture_site.server import SiteServer
from harness.design.model import Design, Launch
from harness.errors import KilltestError, ScraperStartError
from harness.history import History
from harness.running.processes import Start, spawn
from harness.faults.schedule import AfterDelay, AtLine, AtRequest, KillSchedule, Redeploy, ServerRestart
from harness.design.stores import held_leases, stored_counter, stored_files, stored_records

DEFAULT_TIME_LIMIT_S = 120.0
SIDE_EFFECT_PATHS = ("/image/", "/webhook")
STDERR_TAIL_LINES = 5


@dataclass(frozen=True)
class RunSettings:
    """What stays the same across the starts of one run."""

    lease_s: float = 3.0
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    # Crawls of the same store after the killed one, each left to finish: a scheduled re-crawl that
    # must rewrite no unchanged record and add no row. Only for designs that take {crawl}.
    recrawls: int = 0
    workers: int = 1  # worker processes per start, on one store; every kill point hits them all
    # The site's content drifts (fixture_site.catalog.drifted): before every re-crawl, and once
    # `drift_during_s` into the killed crawl when that is set.
    drift: Drift | None = None
    drift_during_s: float | None = None


def run_kill_test(design: Design, schedule: KillSchedule, site: SiteServer, work_dir: str,
                  settings: RunSettings = RunSettings(),
                  on_progress: Callable[[str], None] = lambda message: None, launcher=None,
                  dsn: str = "", restart_store: Callable[[], float] | None = None) -> History:
    """Kill-test `design` once against `site`; its store goes in `work_dir` (or the database `dsn`).

    Returns the run's history. `launcher`, a harness.running.prefork.Zygote for this design, forks each start
    instead of executing a new interpreter: the same process behaviour without the start-up cost.
    `restart_store` crashes and restarts the store's server (for `s` kill points).
    """
    if restart_store is None and any(isinstance(p, ServerRestart) for p in schedule.points):
        raise KilltestError(f"design {design.name!r} has no store server to restart: s<seconds> kill points need a"
                            " PostgreSQL or Redis store")
    if settings.recrawls and not design.can_recrawl:
        raise KilltestError(f"design {design.name!r} does not take {{crawl}}, so it cannot be re-crawled")
    launch = Launch(base_url=site.base_url, work_dir=work_dir, lease_s=settings.lease_s, dsn=dsn)
    location = design.store_location(launch)
    history = History()
    site.request_log.clear()
    site.webhooks.clear()
    began = time.monotonic()
    # Designs stamp their writes with time.time(); this turns such a stamp into history time.
    wall_clock_at_start = time.time()
    deadline = began + settings.time_limit_s
    history.add("run_started", 0.0, design=design.name, seed=schedule.seed, kill_points=[p.spec for p in schedule.points],
                base_url=site.base_url, lease_s=settings.lease_s, time_limit_s=settings.time_limit_s,
                products=len(site.catalog.products), full_crawl_requests=site.catalog.full_crawl_requests,
                wall_clock_at_start=wall_clock_at_start, reports_leases=design.reports_leases,
                drift=settings.drift.spec if settings.drift else None,
                drift_seed=settings.drift.seed if settings.drift else None,
                recrawls=settings.recrawls, workers=settings.workers,
                toxics=site.toxics[0] if site.toxics else None, toxic_seed=site.toxics[1] if site.toxics else None)
    # Every start the run may make: one per kill point, the one that finishes the crawl, then the re-crawls.
    planned = [(point, 1) for point in [*schedule.points, None]]
    planned += [(None, crawl) for crawl in range(2, 2 + settings.recrawls)]
    drift = _SiteDrift(site, settings.drift, history, began)
    if settings.drift is not None and settings.drift_during_s is not None:
        drift.schedule(settings.drift_during_s)
    starts: list[Start] = []
    outcome = "completed"
    current: Start | None = None
    crawl_done = 0
    try:
        for number, (point, crawl) in enumerate(planned, start=1):
            if crawl <= crawl_done:
                continue  # that crawl finished before its kill points ran out
            trigger = _RequestTrigger(point) if isinstance(point, AtRequest) else None
            if trigger is None:
                site.set_request_hook(None)
            elif point.after_response:
                site.set_request_hook(trigger.count, after_sent=trigger.kill_if_due)
            else:
                site.set_request_hook(trigger.count_and_kill_if_due)
            if current is None:  # a point that hit one worker leaves the start running
                drift.before_crawl(crawl)
                index = len(starts)
                current = spawn(design, replace(launch, crawl=crawl), index, settings.workers,
                                point if isinstance(point, AtLine) else None, launcher)
                starts.append(current)
                history.add("process_started", current.started - began, start=index, pid=current.pids[0],
                            pids=current.pids, crawl=crawl)
            if trigger is not None:
                trigger.start = current
            what = "runs to the end" if point is None else f"kill at {point.spec}"
            on_progress(f"start {index + 1}, point {number}/{len(planned)}"
                        f"{f' (re-crawl {crawl - 1})' if crawl > 1 else ''}, {what}")
            timed = isinstance(point, (AfterDelay, Redeploy, ServerRestart))
            waiting_since = time.monotonic()
            remaining_s = max(0.0, deadline - waiting_since)
            try:
                returncode = current.wait(min(point.delay_s, remaining_s) if timed else remaining_s)
            except subprocess.TimeoutExpired:
                if not timed or time.monotonic() >= deadline:
                    returncode = current.kill()
                    history.add("time_limit", time.monotonic() - began, start=index, returncode=returncode,
                                held_leases=held_leases(design, location))
                    outcome = "timed_out"
                    break
                killed_at = time.monotonic()
                grace_s = point.grace_s if isinstance(point, Redeploy) else None
                signal_name = "SIGKILL" if grace_s is None else "SIGTERM"
                if point.worker is not None:
                    if point.worker > settings.workers:
                        raise KilltestError(f"kill point {point.spec} names worker {point.worker}, but each start"
                                            f" has {settings.workers}; give --workers {point.worker} or more")
                    returncode, pid = current.restart_worker(point.worker, grace_s, design,
                                                             replace(launch, crawl=crawl), launcher)
                    history.add("kill", killed_at - began, start=index, signal=signal_name, point=point.spec,
                                worker=point.worker, returncode=returncode, held_leases=held_leases(design, location))
                    history.add("worker_restarted", time.monotonic() - began, start=index, worker=point.worker,
                                pid=pid)
                    continue
                server_down_s = restart_store() if isinstance(point, ServerRestart) else None
                returncode = current.kill() if grace_s is None else current.redeploy(grace_s)
                history.add("kill", killed_at - began, start=index, signal=signal_name, point=point.spec,
                            returncode=returncode, held_leases=held_leases(design, location),
                            **({"server_restart_s": round(server_down_s, 3)} if server_down_s is not None else {}))
                current = None
                continue
            finally:
                site.set_request_hook(None)
            current.reap()
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
            failed = next((w for w in current.workers if w.process.returncode), None)
            current = None
            if failed is not None:
                outcome = "crashed"
                history.add("crash", time.monotonic() - began, start=index, returncode=returncode,
                            stderr_tail=_tail(failed.stderr_path))
                break  # an error no restart should paper over
            crawl_done = crawl  # the crawl ended by itself; the next planned crawl, if any, starts afresh
            drift.cancel_timer()  # a change "during the killed crawl" must not land after it
    finally:
        site.set_request_hook(None)
        drift.restore()
        if current is not None and current.running:
            current.kill()
    ended = time.monotonic()
    _add_requests(history, site, starts, began)
    _add_scraper_events(history, starts, began)
    _add_store_records(history, design, location, wall_clock_at_start, ended - began)
    _add_side_effects(history, design, launch, location, site, began, ended - began)
    # The time the scrapers ran; the rest of the run's wall time is the harness's own (harness/running/phase_clock.py).
    scraper_s = sum(min(start.alive_s, ended - start.started) for start in starts)
    history.add("run_finished", ended - began, outcome=outcome, wall_s=round(ended - began, 4),
                scraper_s=round(scraper_s, 4))
    history = history.sorted()
    first_crash = history.first("crash")
    if first_crash is not None and first_crash["start"] == 0 and not history.of_type("request"):
        last_line = (first_crash["stderr_tail"] or ["(no output)"])[-1]
        raise ScraperStartError(f"design {design.name!r} exited with status {first_crash['returncode']}"
                                f" before its first request: {last_line}")
    return history


class _SiteDrift:
    """Changes the site's catalog during a run, each change a `catalog_changed` event, and puts the
    first catalog back when the run ends (the next design's run starts from the same site)."""

    def __init__(self, site: SiteServer, drift: Drift | None, history: History, began: float) -> None:
        self.site, self.drift, self.history, self.began = site, drift, history, began
        self.original = site.catalog
        self.version = 0
        self.crawl_served = 1  # the crawl the site's current catalog was made for
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def before_crawl(self, crawl: int) -> None:
        """A re-crawl meets a site that changed since the crawl before it."""
        if self.drift is not None and crawl > self.crawl_served:
            self.change_now()
            self.crawl_served = crawl

    def schedule(self, after_s: float) -> None:
        self._timer = threading.Timer(after_s, self.change_now)
        self._timer.daemon = True
        self._timer.start()

    def change_now(self) -> None:
        with self._lock:
            before = self.site.catalog
            self.version += 1
            after = drifted(before, self.drift, self.version)
            self.site.set_catalog(after)
            self.history.add("catalog_changed", time.monotonic() - self.began, version=self.version,
                             **changes_between(before, after), products=len(after.products),
                             full_crawl_requests=after.full_crawl_requests)

    def cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def restore(self) -> None:
        self.cancel_timer()
        with self._lock:
            self.site.set_catalog(self.original)


class _RequestTrigger:
    """Called by the site's threads: SIGKILLs the start's group at its `index`-th request, before or after the answer."""

    def __init__(self, point: AtRequest) -> None:
        self.index = point.index
        self.start: Start | None = None
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
            if self._fired or self._seen != self.index or self.start is None:
                return
            self._fired = True
            self.fired_at = time.monotonic()
        self.start.kill_now()


def _add_requests(history: History, site: SiteServer, starts: list[Start], began: float) -> None:
    """Each request the site served, credited to the start that was running when it arrived."""
    start_times = [s.started for s in starts]
    for served in site.request_log.snapshot():
        start = max((i for i, t in enumerate(start_times) if t <= served.t), default=None)
        # A product's image and the design's webhooks are side effects, not pages of the crawl.
        kind = "side_request" if served.path.startswith(SIDE_EFFECT_PATHS) else "request"
        history.add(kind, served.t - began, path=served.path, status=served.status, start=start,
                    **({"fault": served.fault} if served.fault else {}))


def _add_side_effects(history: History, design: Design, launch: Launch, location: str, site: SiteServer,
                      began: float, read_at: float) -> None:
    """What the design did beyond its store: webhooks the site received, files it wrote, its counter."""
    for delivery in site.webhooks.snapshot():
        history.add("webhook", delivery.t - began, key=delivery.key, payload=delivery.payload)
    for name, sha256 in stored_files(design.files_location(launch)):
        history.add("side_file", read_at, name=name, sha256=sha256)
    counter = stored_counter(design, location)
    if design.store.counter is not None:
        history.add("store_counter", read_at, value=counter)


def _add_scraper_events(history: History, starts: list[Start], began: float) -> None:
    """The JSON lines a scraper printed about itself (ready, lease waits); other output is ignored."""
    for start, stdout_path in ((start, path) for start in starts for path in start.stdout_paths):
        with open(stdout_path, encoding="utf-8", errors="replace") as lines:
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
