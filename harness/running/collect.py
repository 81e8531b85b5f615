"""Collect a run's history once its last start is gone: what the site served, what the scrapers said
about themselves, what the store holds, and what the design did beyond its store.

Each is read from where it happened (the site's request log, the starts' stdout files, the store,
the site's webhook log and the design's files directory), so the history is the whole record of
the run and the checker needs nothing else.
"""

from __future__ import annotations

import json
import os
import re

from killtest.fixture_site.recordings.recorded_site import RecordedSite
from killtest.fixture_site.server import SiteServer
from killtest.harness import defaults
from killtest.harness.check.complaint import ERROR_LINE
from killtest.harness.check.crash_frames import failed_at
from killtest.harness.design.model import Design, Launch
from killtest.harness.design.stores import kind_of, stored_counter, stored_files, stored_records
from killtest.harness.errors import KilltestError
from killtest.harness.faults.points.line import shown_path
from killtest.harness.history import History
from killtest.harness.running.processes import Start

STDERR_TAIL_LINES = 5
TAIL_BYTES = 16_384  # of a start's output, what is read for its last lines
TAIL_LINE_CHARS = 300
_COLOUR = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # ANSI escapes: Crawlee's log colours its levels


def add_requests(history: History, site: SiteServer, starts: list[Start], began: float) -> None:
    """Each request the site served, credited to the start whose door it came in by.

    Each start reaches the site through a door of its own (killtest.fixture_site.doors), so a request it sent
    just before being killed, and that the site read after the next start began, is still the killed
    start's (`late`: the site read it after that start's door was shut). A request without a door (a test's
    own, on the site's port) falls back to the start that was running when it arrived. When a start has
    several workers, a request also names the worker (`worker`, its number, and `pid`, that incarnation's
    process) whose process made its connection, when the site could tell (killtest.fixture_site.socket_owner).
    """
    start_times = [s.started for s in starts]
    by_door = {start.door: start for start in starts if start.door is not None}
    drifted = bool(history.of_type("catalog_changed"))  # then a page names the catalog version it was answered from
    for served in site.request_log.snapshot():
        if served.door is not None and served.door not in by_door:
            continue  # sent through a door of an earlier run (its start was stopped mid-request): not this run's
        if served.door in by_door:
            start: int | None = by_door[served.door].index
        else:
            start = max((i for i, t in enumerate(start_times) if t <= served.t), default=None)
        # A product's image and the design's webhooks are side effects, not pages of the crawl; nor is what
        # a browser asks for of its own accord (its icon, a page's images and scripts: the rule is
        # killtest.fixture_site.request_log's).
        kind = "side_request" if served.side else "request"
        history.add(kind, served.t - began, path=served.path, status=served.status, start=start,
                    **({"kind": "browser"} if served.browser else {}), **({"late": True} if served.late else {}),
                    **({"undelivered": True} if served.undelivered else {}),
                    **({"fault": served.fault} if served.fault else {}), **_worker(served, by_door),
                    **({"version": served.version} if drifted and served.version is not None else {}))


def _worker(served, by_door: dict[int, Start]) -> dict:
    """`worker` and `pid` of a request, when its start has several workers and the site found which made it."""
    start = by_door.get(served.door) if served.door is not None else None
    if start is None or served.worker_pid is None:
        return {}
    number = start.worker_of(served.worker_pid)
    return {} if number is None else {"worker": number, "pid": served.worker_pid}


def add_side_effects(history: History, design: Design, launch: Launch, location: str, site: SiteServer,
                      began: float, read_at: float) -> None:
    """What the design did beyond its store: webhooks the site received, files it wrote, its counter."""
    for delivery in site.webhooks.snapshot():
        history.add("webhook", delivery.t - began, key=delivery.key, payload=delivery.payload)
    for name, sha256 in stored_files(design.files_location(launch)):
        history.add("side_file", read_at, name=name, sha256=sha256)
    counter = stored_counter(design, location)
    if design.store.counter is not None:
        history.add("store_counter", read_at, value=counter)


def add_scraper_events(history: History, starts: list[Start], began: float, site: SiteServer | None = None) -> None:
    """The JSON lines a scraper printed about itself (ready, lease waits); other output is ignored. On a recorded
    site every URL in an event's fields (in lists and objects too, a bare path as well) is masked as a stored
    record's are: a scraper reporting the page it fetched would put its api_key into the history. URLs only,
    as for records, since the checker compares these fields (a lease's `path`) and free-text masking
    (name=value, Bearer) could make two different values equal."""
    redaction = _recording_redaction(site)
    for start, stdout_path in ((s, path) for s in starts for path in s.stdout_paths):
        with open(stdout_path, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue  # a line cut short by SIGKILL, or a design's own chatter
                if isinstance(event, dict) and isinstance(event.get("t"), (int, float)) and "event" in event:
                    fields = {k: v for k, v in event.items() if k not in ("t", "event", "type", "start")}
                    name = event["event"]
                    if redaction is not None:
                        name, fields = _urls_masked(name, redaction), _urls_masked(fields, redaction)
                    history.add("scraper_event", event["t"] - began, start=start.index, name=name, **fields)


def _urls_masked(value, redaction):
    """A JSON value with every string in it (object keys included) through the redaction's urls(), and through
    url() when the whole string is a path (`/items?page=2&api_key=...`: a lease's page, as designs report it)."""
    if isinstance(value, str):
        return redaction.url(value) if value.startswith("/") else redaction.urls(value)
    if isinstance(value, list):
        return [_urls_masked(item, redaction) for item in value]
    if isinstance(value, dict):
        return {_urls_masked(key, redaction): _urls_masked(item, redaction) for key, item in value.items()}
    return value


def add_store_records(history: History, design: Design, location: str, wall_clock_at_start: float,
                      read_at: float, site: SiteServer | None = None) -> None:
    """Every record as the store holds it after the last start, timed by the design's own stamps if it has them.
    On a recorded site the URLs in its key and values are masked as the recording's are (a design keyed by
    its page URL stores the api_key), so neither the history nor the reference made from it holds them,
    and a record is compared masked with the masked reference, whatever credentials the run used."""
    def history_time(stamp: float | None) -> float | None:
        return None if stamp is None else round(min(read_at, stamp - wall_clock_at_start), 6)

    redaction = _recording_redaction(site)
    urls = redaction.urls if redaction is not None else None
    for record in stored_records(design, location):
        written = history_time(record.written_at)
        key, fields = record.key, record.fields
        if urls is not None:
            key = urls(key) if isinstance(key, str) else key
            fields = {name: urls(value) if isinstance(value, str) else value for name, value in fields.items()}
        history.add("store_record", read_at if written is None else written, key=key, fields=fields,
                    stamped=written is not None, changed_t=history_time(record.changed_at),
                    **({"unreadable": record.unreadable} if record.key is None else {}))


def store_found(design: Design, location: str) -> bool | None:
    """Whether the store's file or folder exists at the end; None for a store in a private server."""
    if kind_of(design.store.kind).server is not None:
        return None
    return os.path.exists(location)


def refuse_a_store_never_created(design: Design, location: str, history: History, outcome: str,
                                 site: SiteServer | None = None) -> None:
    """A crawl that finished, fetched every product page of the `site` and left no store at all
    is a spec's mistake (a typo in store.path), not a lost crawl: one line naming the spec's line, not "lost
    500 of 500 records". One that finished without fetching them all after a kill or a power cut is not: the
    fault lost the crawl's requests (a release that marks a request done before its page is processed, killed
    at its first listing page, finishes without ever writing), and the check says so as a finding (every
    record lost, the store never created)."""
    if outcome != "completed" or store_found(design, location) is not False:
        return
    requests = history.of_type("request")
    fetched = {request.get("path") for request in requests}
    faulted = history.of_type("kill") or history.of_type("power_lost")
    catalog = getattr(site, "catalog", None)
    if faulted and catalog is not None and not {product.path for product in catalog.products} <= fetched:
        return
    raise KilltestError(f"{design.store.where('path')}: the store {location} was never created, though design"
                        f" {design.name!r} made {len(requests)} requests and finished: check store.path")


def add_start_output(history: History, starts: list[Start], began: float, site: SiteServer | None = None) -> None:
    """The last lines each start wrote to stderr and stdout (every worker's, in order), whether it was killed,
    stopped or finished: what a report quotes when a start stalled (check/liveness.py). Bounded: only the
    file's last bytes are read. On a recorded site masked as a crash's stderr is."""
    redaction = _recording_redaction(site)
    for start in starts:
        workers = start.retired + start.workers
        said = {"stderr_tail": [line for w in workers for line in _last_lines(w.stderr_path)],
                "stdout_tail": [line for w in workers for line in _last_lines(w.stdout_path)]}
        said = {k: [redaction.text(line) for line in v[-defaults.OUTPUT_TAIL_LINES:]] if redaction is not None
                else v[-defaults.OUTPUT_TAIL_LINES:] for k, v in said.items()}
        history.add("start_output", start.started + start.alive_s - began, start=start.index, **said)


def _last_lines(path: str) -> list[str]:
    """The file's last OUTPUT_TAIL_LINES lines, each cut at TAIL_LINE_CHARS (a page of HTML is one line)."""
    try:
        with open(path, "rb") as src:
            src.seek(0, os.SEEK_END)
            size = src.tell()
            src.seek(max(0, size - TAIL_BYTES))
            text = src.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    lines = text.splitlines()[1:] if size > TAIL_BYTES else text.splitlines()  # the first may be cut short
    lines = [_COLOUR.sub("", line).rstrip()[:TAIL_LINE_CHARS] for line in lines]  # a log's colours are noise here
    return [line for line in lines if line.strip()][-defaults.OUTPUT_TAIL_LINES:]


def stderr_tail(path: str, site: SiteServer | None = None) -> list[str]:
    """The last lines a start wrote to stderr, led by the last line naming an error when that one stands
    above them (a Node.js stack pushes its `SyntaxError: ...` out of the last few lines). On a recorded
    site they are masked with its redaction: they go into the history and the reports, and a scraper's
    error may quote the URL it gave up on, api_key and all."""
    with open(path, encoding="utf-8", errors="replace") as src:
        lines = [line.rstrip() for line in src.readlines()]
    tail = lines[-STDERR_TAIL_LINES:]
    if not any(ERROR_LINE.match(line) for line in tail):
        tail = [line for line in lines[:-STDERR_TAIL_LINES] if ERROR_LINE.match(line)][-1:] + tail
    redaction = _recording_redaction(site)
    return [redaction.text(line) for line in tail] if redaction is not None else tail


def crash_said(path: str, site: SiteServer | None = None) -> dict:
    """What a `crash` event keeps of a crashed start's stderr: its last lines (`stderr_tail`) and the `line` of its
    own program where it failed (`crash_line`)."""
    return {"stderr_tail": stderr_tail(path, site), "line": crash_line(path)}


def crash_line(path: str) -> str:
    """`FILE:LINE` where a crashed start failed in its own program (check/crash_frames.failed_at: the frame of its
    own nearest the failing call in the traceback it printed, asyncio's frames followed), named as a line point
    names its file; "" when it printed no traceback. Read from the file's last TAIL_BYTES: the history keeps only a
    few lines of it, and the frame that matters is usually above them."""
    try:
        with open(path, "rb") as src:
            src.seek(0, os.SEEK_END)
            src.seek(max(0, src.tell() - TAIL_BYTES))
            lines = src.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    frame = failed_at(lines)
    return f"{shown_path(frame.path)}:{frame.line}" if frame is not None else ""


def _recording_redaction(site: SiteServer | None):
    """The recording's redaction when `site` replays one; None for the shop, whose runs hold no secret."""
    catalog = site.catalog if site is not None else None
    return catalog.redaction if isinstance(catalog, RecordedSite) else None
