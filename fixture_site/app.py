"""The Flask app factory for the fixture site; nothing happens at import time."""

from __future__ import annotations

import threading
import time

from flask import Flask, abort, g, request

from fixture_site.catalog import Catalog
from fixture_site.request_log import RequestLog


def create_app(catalog: Catalog, request_log: RequestLog | None = None, latency_s: float = 0.0,
               slow_paths: dict[str, float] | None = None, pace_rps: float = 0.0) -> Flask:
    """A shop serving `catalog`; every request, 404s included, goes into `request_log`.

    `latency_s` delays every answer; `slow_paths` maps a path to how many seconds its answer takes,
    for a page slower than a design's lease. `pace_rps` (0: none) serves at most that many requests a
    second, site-wide, so a crawl takes as long on a fast machine as on the article's.

    `app.config["ON_REQUEST"]`, when set, is called with each request's path as it arrives, before the
    site answers, and `app.config["ON_RESPONSE_SENT"]` once the server has written the answer: the
    harness uses them to kill a scraper at an exact request.
    """
    slow_paths = dict(slow_paths or {})
    if latency_s < 0 or pace_rps < 0 or any(seconds < 0 for seconds in slow_paths.values()):
        raise ValueError("latency_s, pace_rps and slow_paths take zero or more")
    pace = _Pace(pace_rps)
    app = Flask("fixture_site")
    app.config["CATALOG"] = catalog
    app.config["REQUEST_LOG"] = log = request_log if request_log is not None else RequestLog()

    @app.before_request
    def note_arrival() -> None:
        g.arrived = time.monotonic()
        on_request = app.config.get("ON_REQUEST")
        if on_request is not None:
            on_request(request.path)
        pace.wait_for_a_slot()
        delay_s = slow_paths.get(request.path, latency_s)
        if delay_s:
            time.sleep(delay_s)

    @app.after_request
    def count(response):
        log.record(request.path, response.status_code, arrived=g.get("arrived"))
        on_sent = app.config.get("ON_RESPONSE_SENT")
        if on_sent is not None:
            path = request.path
            response.call_on_close(lambda: on_sent(path))  # the WSGI server closes it after writing the body
        return response

    @app.get("/")
    def index():
        return _page("Shop", '<a href="/list/0">All products</a>')

    @app.get("/list/<int:page>")
    def listing(page: int):
        try:
            products, next_page = catalog.listing(page)
        except KeyError:
            abort(404)
        items = "".join(f'<li><a href="{p.path}">Product {p.index}</a></li>' for p in products)
        more = f'<a class="next" href="/list/{next_page}">Next</a>' if next_page is not None else ""
        return _page(f"Listing {page}", f"<ul>{items}</ul>{more}")

    @app.get("/product/<int:index>")
    def product(index: int):
        if not 0 <= index < len(catalog.products):
            abort(404)
        item = catalog.products[index]
        return _page(item.sku, f'<h1 class="name">{item.name}</h1>'
                               f'<span class="sku">{item.sku}</span> <span class="price">{item.price}</span>')

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


def _page(title: str, body: str) -> str:
    return f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"
