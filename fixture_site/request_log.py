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


class RequestLog:
    """Counts requests in total and per path; safe to append from the server's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._served: list[ServedRequest] = []

    def record(self, path: str, status: int, arrived: float | None = None, fault: str | None = None,
               door: int | None = None, worker_pid: int | None = None, version: int | None = None) -> None:
        entry = ServedRequest(t=time.monotonic() if arrived is None else arrived, path=path, status=status,
                              fault=fault, door=door, worker_pid=worker_pid, version=version)
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
