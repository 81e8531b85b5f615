"""A thread-safe journal of every request the site served."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class ServedRequest:
    """One request as the server saw it arrive; `t` is time.monotonic(), shared by every process here."""

    t: float
    path: str
    status: int  # 0: the connection was dropped before any answer (a reset or timeout toxic)
    fault: str | None = None  # the toxic the site injected into this request (killtest.fixture_site.toxics)
    door: int | None = None  # the port it came in by, when the start was given one (killtest.fixture_site.doors)
    worker_pid: int | None = None  # the worker process that made it, when the harness asked (socket_owner)
    version: int | None = None  # the catalog version a listing or product page was answered from (drift)
    browser: bool = False  # asked for by the browser of its own accord (browser_initiated), not by the crawl
    late: bool = False  # read after its start's door was shut: sent by a start killed before the site read it
    # Answered after its start was killed at it (an `r5` point, or a request held for that kill) or after its client
    # hung up: the answer reached no one, so it fetched nothing (killtest.harness.check.holes).
    undelivered: bool = False

    @property
    def side(self) -> bool:
        """Not a request of the crawl's: a side effect (a product's image, a webhook) or the browser's own."""
        return self.browser or side_effect(self.path)


# Which requests are the crawl's. A crawl's request is one the design's program asked for: a page it
# fetched (an HTTP client's GET) or navigated to (a browser's `goto`). Request points (`r5`: the 5th),
# the progress lines' counts and `bounded_requests` count those only. Not the crawl's:
# - the shop's side effects: a product's image (what a page shows, not a page) and the webhooks;
# - the shop's files for crawlers, /robots.txt and /sitemap.xml: a framework asks for robots.txt of its own
#   accord (Scrapy's ROBOTSTXT_OBEY), and neither is a page, so a full crawl is the same 525 requests whether
#   its crawler read them or not (the request points still count them, as they count images: the design sent them);
# - what a browser asks for of its own accord: Chromium asks for /favicon.ico after every navigation to
#   a new page of a site, Safari (and browsers imitating it) for the touch icons; a speculative fetch
#   (`Sec-Purpose: prefetch` or `prerender`);
# - what a page a browser loaded asks for: its images, scripts, stylesheets, fonts, and its scripts'
#   fetches. Chromium says so in `Sec-Fetch-Dest` (Fetch Metadata, sent to https and loopback sites): a
#   navigation is `document` (`iframe`, `frame` in a frame), a subresource names its kind (`image`,
#   `script`, `style`, ...), a script's fetch or XHR `empty`. An HTTP client (requests, Scrapy, Node's fetch,
#   curl) sends no `Sec-Fetch-Dest`: its requests are all the crawl's, whatever their path.
# The header, not the answer, decides: a crawl of a JSON API asks for pages that are not HTML, and a
# recording's HTML answers include a page's iframes. A crawler that fetches its pages from inside a page
# (`page.evaluate(fetch)`, `empty`) has them counted as the browser's: navigate, or use an HTTP client.
BROWSER_PATHS = ("/favicon.ico", "/apple-touch-icon.png", "/apple-touch-icon-precomposed.png")
SIDE_EFFECT_PATHS = ("/image/", "/webhook")  # the shop's: a product's image, the design's webhooks
CRAWLER_FILES = ("/robots.txt", "/sitemap.xml")  # the shop's files for crawlers (fixture_site/pages.py)
NAVIGATIONS = ("document", "iframe", "frame")  # the Sec-Fetch-Dest of a page the crawl went to


def browser_initiated(path: str, purpose: str | None = None, dest: str | None = None) -> bool:
    """Whether a request for `path` (a recorded site's `/` + URL too) is the browser's own, not the crawl's:
    an icon, a speculative fetch (a `Sec-Purpose: prefetch` or `prerender` header, given as `purpose`), or
    what a loaded page asked for (a `Sec-Fetch-Dest` other than a navigation's, given as `dest`)."""
    return (path.split("?", 1)[0].endswith(BROWSER_PATHS)
            or bool(purpose and purpose.startswith(("prefetch", "prerender")))
            or bool(dest and dest.strip().lower() not in NAVIGATIONS))


def side_effect(path: str) -> bool:
    """A request of the shop's that is a side effect of the crawl, or one of its files for crawlers: not a page."""
    return path.startswith(SIDE_EFFECT_PATHS) or path in CRAWLER_FILES


class RequestLog:
    """Counts requests in total and per path; safe to append from the server's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._served: list[ServedRequest] = []
        # Answers the site holds on purpose (a slow page, latency), by door: how many now, and when the last ended.
        self._holding: Counter[int | None] = Counter()
        self._held_until: dict[int | None, float] = {}

    def record(self, path: str, status: int, arrived: float | None = None, fault: str | None = None,
               door: int | None = None, worker_pid: int | None = None, version: int | None = None,
               browser: bool = False, late: bool = False, undelivered: bool = False) -> None:
        entry = ServedRequest(t=time.monotonic() if arrived is None else arrived, path=path, status=status,
                              fault=fault, door=door, worker_pid=worker_pid, version=version, browser=browser,
                              late=late, undelivered=undelivered)
        with self._lock:
            self._served.append(entry)

    @contextlib.contextmanager
    def holding(self, door: int | None) -> Iterator[None]:
        """While in it the site holds, on purpose, an answer to a request that came in by `door`: the seconds a
        start waits on a slow page are the site's, not the start's (killtest.harness.running.start_watch)."""
        with self._lock:
            self._holding[door] += 1
        try:
            yield
        finally:
            with self._lock:
                self._holding[door] -= 1
                self._held_until[door] = time.monotonic()

    def held_until(self, door: int | None) -> float | None:
        """The last moment the site held an answer of `door`'s on purpose: now while it holds one, else when the
        last such hold ended; None if it never held one."""
        with self._lock:
            return time.monotonic() if self._holding[door] else self._held_until.get(door)

    def snapshot(self) -> list[ServedRequest]:
        """Every request so far, in arrival order."""
        with self._lock:
            return list(self._served)

    def clear(self) -> None:
        with self._lock:
            self._served.clear()

    @property
    def total(self) -> int:
        with self._lock:
            return len(self._served)

    @property
    def crawl_total(self) -> int:
        """The crawl's requests so far: side requests (images, webhooks, a browser's own) left out."""
        with self._lock:
            return sum(1 for entry in self._served if not entry.side)

    def per_path(self) -> Counter[str]:
        with self._lock:
            return Counter(entry.path for entry in self._served)

    def served_more_than_once(self) -> dict[str, int]:
        """Paths fetched twice or more, with how often each was fetched."""
        return {path: n for path, n in self.per_path().items() if n > 1}
