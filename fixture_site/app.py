"""The Flask app factory for the fixture site; nothing happens at import time."""

from __future__ import annotations

import select
import socket
import struct
import threading
import time

from flask import Flask, Response, abort, g, request

from killtest.fixture_site import pages
from killtest.fixture_site.catalog import Catalog
from killtest.fixture_site.doors import ARRIVED, CLOSED_DOOR, DOOR, WORKER_PID
from killtest.fixture_site.request_log import RequestLog, browser_initiated
from killtest.fixture_site.toxics import ToxicDice, toxic_named
from killtest.fixture_site.webhooks import WebhookLog


def create_app(catalog: Catalog, request_log: RequestLog | None = None, latency_s: float = 0.0,
               slow_paths: dict[str, float] | None = None, pace_rps: float = 0.0,
               webhooks: WebhookLog | None = None) -> Flask:
    """A shop serving `catalog`; every request, 404s included, goes into `request_log`.

    `latency_s` delays every answer; `slow_paths` maps a path to how many seconds its answer takes,
    for a page slower than a design's lease. `pace_rps` (0: none) serves at most that many requests a
    second, site-wide, so a crawl takes as long on a fast machine as on the article's.

    `app.config["TOXICS"]`, a killtest.fixture_site.toxics.ToxicDice when set, injects network faults.

    `app.config["ON_REQUEST"]`, when set, is called with each request's path as it arrives, before the
    site answers, and `app.config["ON_RESPONSE_SENT"]` once the server has written the answer: the
    harness uses them to kill a scraper at an exact request; `ON_REQUEST` returns True when it killed the start
    that sent the request, whose answer the log then marks as reaching no one (`undelivered`, as one written after
    its client hung up). What a browser asks for of its own accord
    (killtest.fixture_site.request_log.browser_initiated) calls neither: `r5` is the design's 5th request,
    not the browser's icon; the shop's images and webhooks, which the design itself asks for, are requests.
    Nor does a request that came in through a door closed before the site read it (a killed start's).
    `app.config["ON_REQUEST_BY"]`, when set, is called first for such a request, with the path and the pid
    of the worker the request is credited to (None when it could not be told: fixture_site/socket_owner.py):
    an aimed pause stops that worker at its own request.
    """
    slow_paths = dict(slow_paths or {})
    if latency_s < 0 or pace_rps < 0 or any(seconds < 0 for seconds in slow_paths.values()):
        raise ValueError("latency_s, pace_rps and slow_paths take zero or more")
    pace = _Pace(pace_rps)
    app = Flask("fixture_site")
    # (catalog, its version number), replaced together when the site drifts (SiteServer.set_catalog): a page
    # is answered from one version, and logged with its number.
    app.config["SERVED"] = (catalog, 0)
    app.config["REQUEST_LOG"] = log = request_log if request_log is not None else RequestLog()
    app.config["WEBHOOKS"] = deliveries = webhooks if webhooks is not None else WebhookLog()

    def _catalog() -> Catalog:
        """The catalog this request is answered from; its version goes into the request log."""
        catalog, g.version = app.config["SERVED"]
        return catalog

    @app.before_request
    def note_arrival() -> None:
        g.arrived = request.environ.get(ARRIVED, time.monotonic())
        g.browser = browser_initiated(request.path, request.headers.get("Sec-Purpose"),
                                      request.headers.get("Sec-Fetch-Dest"))
        # The request hooks see every request the design made, its images and webhooks too (a kill between a
        # product's record and its image is a point of the side-effect designs and the BullMQ cases), and none
        # of a browser's own: `r5` is the design's 5th request, never the browser's icon.
        # Nor a dead start's: a request it sent before its kill and the site reads only after its door closed is
        # its own (the request log credits it so), never the running start's `r5` or first request.
        counted = not g.browser and not request.environ.get(CLOSED_DOOR)
        by_worker = app.config.get("ON_REQUEST_BY")
        if by_worker is not None and counted:
            by_worker(request.path, request.environ.get(WORKER_PID))
        on_request = app.config.get("ON_REQUEST")
        if on_request is not None and counted:
            g.undelivered = bool(on_request(request.path))  # True: the hook killed this request's start
        pace.wait_for_a_slot()
        delay_s = slow_paths.get(request.path, latency_s)
        if delay_s:
            _hold(log, delay_s)
        dice: ToxicDice | None = app.config.get("TOXICS")
        if dice is not None:
            return _inject(dice, log)
        return None

    @app.after_request
    def count(response):
        fault = g.get("fault")
        if request.environ.get(DROP):
            return response  # logged when the toxic was rolled; this answer is never sent
        if fault is not None:  # the toxic rolled for this request may change the page (truncate cuts it)
            toxic_named(fault).alter(g.toxics, response)
        log.record(request.path, response.status_code, arrived=g.get("arrived"), fault=fault,
                   door=request.environ.get(DOOR), worker_pid=request.environ.get(WORKER_PID),
                   version=g.get("version"), browser=g.get("browser", False),
                   late=bool(request.environ.get(CLOSED_DOOR)),
                   undelivered=bool(g.get("undelivered")) or _hung_up(request.environ.get("werkzeug.socket")))
        on_sent = app.config.get("ON_RESPONSE_SENT")
        if on_sent is not None and not g.get("browser", False) and not request.environ.get(CLOSED_DOOR):
            path = request.path
            response.call_on_close(lambda: on_sent(path))  # the WSGI server closes it after writing the body
        return response

    app.wsgi_app = _dropping_connections(app.wsgi_app)  # type: ignore[method-assign]  # Flask's documented way

    # The pages are a real shop's (fixture_site/pages.py): what the crawlers parse is as it always was.
    @app.get("/")
    def index():
        return pages.home_page()

    @app.get("/list/<int:page>")
    def listing(page: int):
        try:
            return pages.listing_page(_catalog(), page)
        except KeyError:
            abort(404)

    @app.get("/product/<int:index>")
    def product(index: int):
        item = _catalog().product(index)
        if item is None:
            abort(404)
        return pages.product_page(item)

    # What a crawler may ask for before it crawls: side requests, not the crawl's (fixture_site/request_log.py).
    @app.get("/robots.txt")
    def robots():
        return Response(pages.robots_txt(request.host_url.rstrip("/")), mimetype="text/plain")

    @app.get("/sitemap.xml")
    def sitemap():
        return Response(pages.sitemap_xml(_catalog(), request.host_url.rstrip("/")), mimetype="application/xml")

    @app.get("/image/<int:index>.png")
    def image(index: int):
        item = _catalog().product(index)
        if item is None:
            abort(404)
        return Response(item.image(), mimetype="image/png")

    @app.post("/webhook")
    def webhook():
        payload = request.get_json(silent=True)
        if not isinstance(payload, dict):
            return Response("a webhook body is a JSON object\n", 400, mimetype="text/plain")
        deliveries.record(request.headers.get("Idempotency-Key"), payload)
        return Response(status=204)

    return app


def _inject(dice: ToxicDice, log: RequestLog):
    """Roll this request's toxic and let it act: answer for the page (None), answer with an error, or drop
    the connection (the toxics are the modules of fixture_site/toxics/)."""
    fault, delay_s = dice.roll(request.path)
    if delay_s:
        _hold(log, delay_s)
    g.fault, g.toxics = fault, dice.toxics
    if fault is None:
        return None
    return toxic_named(fault).inject(dice.toxics, _Injection(log))


def _hold(log: RequestLog, seconds: float) -> None:
    """Keep this request's answer `seconds` on purpose (a slow page, latency, a timeout toxic), counted as the
    site's time (RequestLog.holding: the start is waiting on the site) while its client waits, not once the client
    hung up: a start that gave up on the page and then hangs is stuck, whatever the site is still doing."""
    until = time.monotonic() + seconds
    with log.holding(request.environ.get(DOOR)):
        gone = _hung_up_before(request.environ.get("werkzeug.socket"), until)
    if gone:  # the site keeps its answer as long as it would have: it just no longer counts
        time.sleep(max(0.0, until - time.monotonic()))


def _hung_up_before(connection: socket.socket | None, until: float) -> bool:
    """Sleep until `until`; True, at once, if the client closes its connection before then (an end of file)."""
    if connection is not None:
        watch = select.poll()
        watch.register(connection, select.POLLIN)
        while (left := until - time.monotonic()) > 0 and watch.poll(left * 1000):
            gone = _closed(connection)
            if gone is None:
                continue  # woken with nothing to read
            if gone:
                return True
            break  # bytes waiting (a pipelined request): nothing more to learn from the socket
    time.sleep(max(0.0, until - time.monotonic()))
    return False


def _hung_up(connection: socket.socket | None) -> bool:
    """Whether the client has closed its connection already (a start killed while the site held or paced its
    request): the answer about to be written reaches no one."""
    if connection is None:
        return False
    watch = select.poll()
    watch.register(connection, select.POLLIN)
    return bool(watch.poll(0)) and bool(_closed(connection))


def _closed(connection: socket.socket) -> bool | None:
    """On a readable connection: True at an end of file or a reset, False with bytes waiting, None with nothing."""
    try:
        return connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""  # b"": the client closed its end
    except BlockingIOError:
        return None
    except OSError:
        return True  # reset by the client


class _Injection:
    """What a toxic may do to the request it was rolled for (killtest.fixture_site.toxics.Injection)."""

    def __init__(self, log: RequestLog) -> None:
        self.log = log

    def answer(self, status: int, text: str, headers=None) -> Response:
        # Read the body the view will not: left in the socket, a POST's body would be parsed as the
        # next request on the kept-alive connection.
        request.get_data()
        return Response(text, status, mimetype="text/plain", headers=headers)

    def hold(self, seconds: float) -> None:
        _hold(self.log, seconds)

    def drop(self) -> Response:
        self.log.record(request.path, 0, arrived=g.get("arrived"), fault=g.get("fault"),
                        door=request.environ.get(DOOR), worker_pid=request.environ.get(WORKER_PID),
                        browser=g.get("browser", False))
        request.environ[DROP] = True  # _dropping_connections drops it once Flask has returned
        return Response(status=204)


DROP = "killtest.drop_connection"


def _dropping_connections(wsgi_app):
    """WSGI middleware: a request marked DROP gets no answer at all. Its connection is shut down, so
    the server reads no further request on it, and closed with SO_LINGER 0, a reset; raising a
    ConnectionError tells werkzeug the client is gone before it wrote a byte (Flask would have made
    any exception raised inside it a 500)."""
    def app(environ, start_response):
        body = wsgi_app(environ, start_response)
        if not environ.get(DROP):
            return body
        getattr(body, "close", lambda: None)()
        connection = environ.get("werkzeug.socket")
        if connection is not None:
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        raise ConnectionAbortedError("killtest toxic: connection dropped")
    return app


class _Pace:
    """Hands out answer slots at most `rps` a second, site-wide, in arrival order."""

    def __init__(self, rps: float) -> None:
        self.interval_s = 1.0 / rps if rps else 0.0
        self._next_slot = 0.0
        self._lock = threading.Lock()

    def wait_for_a_slot(self) -> None:
        if not self.interval_s:
            return
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next_slot)
            self._next_slot = slot + self.interval_s
        if slot > now:
            time.sleep(slot - now)
