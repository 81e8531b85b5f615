"""`f0.4[:B]`: SIGKILL 0.4 s after the start's first request, whatever the start's own start-up took.

A timed point (`t0.4`) counts from the spawn, so a start slower to its first request than the one the
delays were measured on (a browser's start-up moves by more than a third from run to run) is killed
before it did any work, and the kill proves nothing. This kind counts from the start's own first
request instead: the site's request hook notes it (the design's requests only, from any worker: never a
browser's own icon), and a thread of the point waits the delay and SIGKILLs the start's process
groups, as a `t` point does; the runner records the kill at that moment.

A start may make no request for a long time: it is waiting out what a killed start held (Crawlee waits
about 180 s for a request lock). So the first request is waited for at most B seconds after the spawn
(`:B`, or FIRST_REQUEST_WAIT_S when left out); past that the point fires at spawn + B + the delay, and
the run goes on. Only once the crawl has begun, though: while no start of the run has made a request, there
is nothing a killed start held to wait on, and a start slower than B (a loaded machine) is still starting,
so the point waits on for its first request (the run's time limit and no-progress stop still end a start
that never makes one). `killtest run` measures a user's design first (harness/running/pace.py) and writes B
from the measured start-up, so every replay line carries it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from killtest.harness.defaults import FIRST_REQUEST_WAIT_S
from killtest.harness.faults.points import Armed, DesignLike, PointKind, positive_seconds, register


@register
@dataclass(frozen=True)
class AfterFirstRequest(PointKind):
    delay_s: float  # from the start's first request
    wait_first_s: float = FIRST_REQUEST_WAIT_S  # the first request is waited for this long after the spawn

    PREFIX = "f"
    FORM = "f<seconds after the first request>[:<seconds to wait for it>]"
    EXAMPLES = ("f0.4", "f0.4:8")
    ORDER = 12

    @classmethod
    def parse(cls, text: str, design: DesignLike | None = None) -> AfterFirstRequest:
        delay, colon, wait = text[len(cls.PREFIX):].partition(":")
        if colon:
            return cls(positive_seconds(delay), positive_seconds(wait))
        return cls(positive_seconds(delay))

    @property
    def spec(self) -> str:
        wait = "" if self.wait_first_s == FIRST_REQUEST_WAIT_S else f":{self.wait_first_s:g}"
        return f"f{self.delay_s:g}{wait}"

    def arm(self, site: Any) -> Armed:
        return FirstRequestTrigger(self, site)


class FirstRequestTrigger:
    """Notes the start's first request (the site's threads call it), then kills the start `delay_s` later
    from a thread of its own; at spawn + `wait_first_s` + `delay_s` when no request came by then in a crawl
    an earlier start had begun."""

    def __init__(self, point: AfterFirstRequest, site: Any) -> None:
        self.point = point
        self.site = site
        self.fired_at: float | None = None
        self.first_request_at: float | None = None
        self._first = threading.Event()
        self._disarmed = threading.Event()
        self._thread: threading.Thread | None = None
        # Armed before the spawn: a pre-forked start may ask for its first page before `watch`.
        site.set_request_hook(self.note)

    def note(self, path: str) -> None:
        if not self._first.is_set():
            self.first_request_at = time.monotonic()
            self._first.set()

    def watch(self, start: Any) -> None:
        self._thread = threading.Thread(target=self._kill_when_due, args=(start,), daemon=True,
                                        name=f"killtest-{self.point.spec}")
        self._thread.start()

    def _kill_when_due(self, start: Any) -> None:
        point = self.point
        self._first.wait(max(0.0, start.started + point.wait_first_s - time.monotonic()))
        if not self._first.is_set() and self.site.request_log.crawl_total == 0:
            self._first.wait()  # nobody has begun the crawl: this start is still starting, not waiting
        if self._disarmed.is_set():
            return
        base = self.first_request_at if self.first_request_at is not None else start.started + point.wait_first_s
        if self._disarmed.wait(max(0.0, base + point.delay_s - time.monotonic())):
            return  # the start ended by itself (or the run stopped) before the point was due
        self.fired_at = time.monotonic()
        start.kill_now()

    def disarm(self) -> None:
        self._disarmed.set()
        self._first.set()  # wakes a thread still waiting for the first request
        self.site.set_request_hook(None)
        if self._thread is not None:
            self._thread.join()
