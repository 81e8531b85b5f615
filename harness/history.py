"""The history of one run: every start, kill, exit, request and scraper event, in time order.

The runner writes it; the checker and the report read only it (and the store). Times are seconds
since the run began, on the monotonic clock that the scraper, the site and the runner share.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from killtest.harness.files import write_atomically

# Every event type a run's history may hold, with the fields it carries besides `type` and `t`.
# docs/reference/history.md is generated from this (python -m killtest.harness.report.reference --write), and
# tests/test_docs.py fails when the runner adds an event that is not listed here.
EVENTS: dict[str, str] = {
    "run_started": "design, seed, kill_points (the schedule's points), base_url, lease_s, time_limit_s, products,"
                   " full_crawl_requests, wall_clock_at_start, reports_leases, drift and drift_seed, recrawls,"
                   " workers, toxics and toxic_seed, restart_delay (--restart-delay's text: 0, 12, backoff,"
                   " backoff:BASE:CAP)",
    "process_started": "start (its index), pid and pids (one per worker), crawl (1, or 2 and up for a re-crawl),"
                       " door (the site's door it was given, its workers share it: killtest.fixture_site.doors)",
    "kill": "start, signal (SIGKILL, or SIGTERM for a redeploy), point, returncode (the exit status the kernel"
            " reported, -9), held_leases (the claims the store held afterwards); worker and worker_pid (its"
            " process) when one worker was hit, server_restart_s when the store's server was restarted,"
            " aimed_elsewhere (a store-write point's kill delivered at another write than its recording aimed at:"
            " which, in words); store_rows, store_bytes and store_mtime_ns when the whole start was killed: the"
            " rows the store held just after the kill (none: unreadable), its files' size and latest change (none: a"
            " server's store), the crash state the kill reached (harness/running/kill_state.py)",
    "restart_delayed": "start (the start about to begin), restart (its number in the back-off: 1, 2, ...), seconds"
                       " (the delay --restart-delay gave it), waited_s (measured, never less), restart_delay: a whole"
                       " start was killed and the next waited, as a supervisor restarts a crawler; not counted"
                       " against the time limit (harness/running/restart_wait.py)",
    "worker_restarted": "start, worker, pid: a worker killed alone and started again at once",
    "paused": "start, worker (none: every worker), pids (the process groups sent SIGSTOP), seconds (planned),"
              " point, and with --aim-pauses aimed_at (the product page the worker was stopped asking for, before"
              " the site answered): a pause point stopped the start or one worker",
    "resumed": "start, worker, pids (the groups sent SIGCONT), seconds (how long they were stopped), point",
    "power_lost": "start, point, names_lost, names_restored, bytes_reverted (paths under the work dir), files and"
                  " bytes (how many of the design's files, and bytes, the cut took): a power-cut point SIGKILLed"
                  " the start and dropped what no fsync had made durable",
    "process_exited": "start, returncode, held_leases (the claims the store still held when the start ended"
                      " by itself)",
    "crash": "start, returncode, stderr_tail (the last lines the start wrote to stderr; on a recorded site,"
             " credentials masked), pid (the process that failed), workers (the start's), line (`FILE:LINE` of its"
             " own frame nearest the failing call in the traceback it printed, '' without one): it exited with an"
             " error",
    "start_output": "start, stderr_tail and stdout_tail (the last lines the start wrote to each, every worker's;"
                    " on a recorded site, credentials masked), at the start's end: what a report quotes when it"
                    " stalled or the crawl did not finish",
    "time_limit": "start, returncode, held_leases, no_progress_s (when it was stopped for making no progress"
                  " that long, not by the time limit), cpu_wait_s (when the start or the harness waited for a CPU"
                  " meanwhile: seconds not counted as no progress, and added to the deadline): the start was"
                  " stopped",
    "catalog_changed": "version, changed, removed, added (SKUs), products, full_crawl_requests: the site drifted",
    "request": "path, status, start (the start whose door it came in by; without a door, the start running when"
               " it arrived), fault (the network fault it met, if any), worker and pid (with several workers: the"
               " worker whose process made the connection, when the site could tell), version (when the site"
               " drifted: the catalog version a listing or product page was answered from), late (true when the"
               " site read it only after its start's door was shut: a request a killed start sent, which may arrive"
               " after the next start began), undelivered (true when its answer reached no one: its start was"
               " killed at it by an `r<n>` point or while the site held it for that kill, or its client had hung up"
               " before the answer, as after a timed kill during a paced or slow answer; neither a late nor an"
               " undelivered answer is a page the crawl fetched, for the holes check)",
    "side_request": "path, status, start, fault, kind (browser: what a browser asked for of its own accord, its"
                    " icon, a prefetch, or a loaded page's image, script or style by its Sec-Fetch-Dest): a request"
                    " for a product's image, a webhook, the shop's robots.txt or sitemap.xml, or a browser's own: not a"
                    " page of the crawl",
    "webhook": "key (the idempotency key, or none), payload: a delivery the site received",
    "side_file": "name, sha256: a file in the design's store.files directory at the end",
    "store_counter": "value: the design's store.counter at the end",
    "scraper_event": "start, name (ready, lease_wait, retry, ...) and the fields of a JSON line the design"
                     " printed about itself; a design that reports its leases prints claimed (path, lease_s, pid)"
                     " and committed (path, pid), which the zombie-writer check reads; on a recorded site the URLs"
                     " (and bare paths) in name and fields have their credentials masked",
    "store_record": "key, fields, stamped (whether t is the design's own write time), changed_t (its last"
                    " change), unreadable (a row that could not be read): every record the store held at the end;"
                    " on a recorded site the URLs in key and fields have their credentials masked",
    "run_finished": "outcome (completed, timed_out, crashed), wall_s, scraper_s (the time the scrapers ran),"
                    " store_found (whether the store's file or folder existed at the end; none for a server's),"
                    " cpu_wait_s (seconds the starts or the harness waited for a CPU while watched: a loaded machine)",
}


@dataclass
class History:
    """Events as plain dicts, each with a `type` and a time `t`."""

    events: list[dict] = field(default_factory=list)

    def add(self, type_: str, t: float, **fields) -> dict:
        event = {"type": type_, "t": round(t, 6), **fields}
        self.events.append(event)
        return event

    def of_type(self, type_: str) -> list[dict]:
        return [e for e in self.events if e["type"] == type_]

    def first(self, type_: str) -> dict | None:
        found = self.of_type(type_)
        return found[0] if found else None

    def sorted(self) -> History:
        return History(sorted(self.events, key=lambda e: e["t"]))

    def write_jsonl(self, path: str) -> None:
        """Write atomically: a reader finds the whole history or none, never half of it."""
        write_atomically(path, "".join(json.dumps(event, sort_keys=True) + "\n" for event in self.events))

    @classmethod
    def read_jsonl(cls, path: str) -> History:
        with open(path, encoding="utf-8") as src:
            return cls([json.loads(line) for line in src if line.strip()])


def events_in_folder(folder: str) -> Iterator[dict]:
    """Every event of a results folder's history/ (its start files in name order): what a case's bisection and
    report read of a run they did not hold in memory."""
    history = os.path.join(folder, "history")
    for name in sorted(os.listdir(history)) if os.path.isdir(history) else []:
        with open(os.path.join(history, name), encoding="utf-8") as src:
            yield from (json.loads(line) for line in src if line.strip())


def first_in_folder(folder: str, type_: str) -> dict | None:
    """The first event of `type_` in a results folder's history/, None without one (its first kill, say)."""
    return next((event for event in events_in_folder(folder) if event.get("type") == type_), None)
