"""A thread-safe journal of every request the site served."""

from __future__ import annotations

import threading
import time
from collections import Counter
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


# What a browser fetches of its own accord on a site it visits: Chromium asks for /favicon.ico after every
# navigation to a new page of a site, and Safari (and browsers imitating it) for the touch icons.
BROWSER_PATHS = ("/favicon.ico", "/apple-touch-icon.png", "/apple-touch-icon-precomposed.png")


def browser_initiated(path: str, purpose: str | None = None) -> bool:
    """Whether a request for `path` (a recorded site's `/` + URL too) is the browser's own, not the crawl's:
    an icon, or a speculative fetch (a `Sec-Purpose: prefetch` or `prerender` header, given as `purpose`)."""
    return path.split("?", 1)[0].endswith(BROWSER_PATHS) or bool(purpose and purpose.startswith(("prefetch",
                                                                                                  "prerender")))


class RequestLog:
    """Counts requests in total and per path; safe to append from the server's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._served: list[ServedRequest] = []

    def record(self, path: str, status: int, arrived: float | None = None, fault: str | None = None,
               door: int | None = None, worker_pid: int | None = None, version: int | None = None,
               browser: bool = False) -> None:
        entry = ServedRequest(t=time.monotonic() if arrived is None else arrived, path=path, status=status,
                              fault=fault, door=door, worker_pid=worker_pid, version=version, browser=browser)
        with self._lock:
            self._served.append(entry)

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

    def per_path(self) -> Counter[str]:
        with self._lock:
            return Counter(entry.path for entry in self._served)

    def served_more_than_once(self) -> dict[str, int]:
        """Paths fetched twice or more, with how often each was fetched."""
        return {path: n for path, n in self.per_path().items() if n > 1}
