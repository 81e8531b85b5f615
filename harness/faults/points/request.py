"""`r5`, `r5+`: SIGKILL when the site receives the start's 5th request, before it answers (exact), or
after the answer, on entering the first store write the scraper makes after it (`+`, exact).

`r5+` is made exact the way store-write points are (harness/faults/points/store_write.py): a
recording of the start finds the first write-type call to the store after the scraper sent its 5th
request (for a scraper that waits for each answer, the first after it read the answer), and strace
kills the start on entering that call. explore, fuzz and replay resolve it so (harness/running/
write_plans.py). Left unresolved (a server store, or a command that does not record first) it falls
back to the site's signal once the answer is written, which races the scraper: not exact.

A crawler with several requests in flight (Scrapy's 16, a browser's pool) gets no answer past an `r5`:
from the due request on, the site holds every later request until the kill has been sent, so a harness
slow to send it (a loaded machine) cannot let the crawl go on past its point. The site's `r5+` fires on
the 5th request's own answer, whatever number the site has counted to by then (not held: a dropped answer
never runs its hook).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from killtest.harness.faults.points import Armed, DesignLike, NotArmed, PointKind, StartOptions, register
from killtest.harness.faults.points.store_write import gate_options
from killtest.harness.faults.store_writes import InjectionPlan


@register
@dataclass(frozen=True)
class AtRequest(PointKind):
    index: int  # 1-based, counting the start's own requests
    after_response: bool = False  # False: before the site answers; True: at the first store write after it
    # `r5+` once a recording resolved it (harness/running/write_plans.py): strace's kill at that write,
    # None when the start writes nothing after that answer.
    plan: InjectionPlan | None = field(default=None, compare=False)
    resolved: bool = field(default=False, compare=False)

    PREFIX = "r"
    FORM = "r<request number>[+]"
    EXAMPLES = ("r5", "r5+")
    ORDER = 20

    @classmethod
    def parse(cls, text: str, design: DesignLike | None = None) -> AtRequest:
        after = text.endswith("+")
        index = int(text[len(cls.PREFIX):-1] if after else text[len(cls.PREFIX):])
        if index < 1:
            raise ValueError(text)
        return cls(index, after_response=after)

    @property
    def spec(self) -> str:
        return f"r{self.index}{'+' if self.after_response else ''}"

    @property
    def needs_own_start(self) -> bool:
        return self.after_response  # `r5+` is strace's, set up when its start is spawned

    def start_options(self, values: Mapping[str, str] | None = None) -> StartOptions:
        return gate_options(self.plan, values) if self.resolved else StartOptions()

    def arm(self, site: Any) -> Armed:
        if self.resolved:
            return NotArmed()  # strace kills inside the scraper
        return RequestTrigger(self, site)


WATCH_WAIT_S = 10.0  # how long a due request waits for the start it must kill to be known


class RequestTrigger:
    """Called by the site's threads: SIGKILLs the start's group at its `index`-th request, before or after
    the answer."""

    def __init__(self, point: AtRequest, site: Any) -> None:
        self.index = point.index
        self.site = site
        self.start: Any = None  # a killtest.harness.running.processes.Start
        self.fired_at: float | None = None
        self._seen = 0
        self._fired = False
        self._lock = threading.Lock()
        # The trigger is armed before the start is spawned and watches it once it is: a pre-forked start
        # can ask for its first page in between, so a due request waits (briefly) for the start to kill.
        self._watched = threading.Event()
        self._landed = threading.Event()  # set once the due request's kill was sent (or could not be)
        self._arrived = threading.local()  # the number of the request the site's thread is answering
        # `r5` only: its kill is sent before the 5th answer, on that request's own thread, always. `r5+` fires from
        # the answer's after-sent hook, which a dropped answer (a reset toxic) never runs: held, every later
        # request would wait the whole WATCH_WAIT_S.
        self._hold = not point.after_response
        if point.after_response:
            site.set_request_hook(self.count, after_sent=self.kill_if_due)
        else:
            site.set_request_hook(self.count_and_kill_if_due)

    def watch(self, start: Any) -> None:
        self.start = start
        self._watched.set()

    def disarm(self) -> None:
        self.site.set_request_hook(None)
        self._landed.set()  # nothing held is left waiting

    def count(self, path: str) -> bool:
        """Count the request; True if it was held until its start was killed (its answer reaches no one)."""
        with self._lock:
            self._seen += 1
            self._arrived.number = seen = self._seen  # this request's number, for its own answer's hook
        if seen > self.index and self._hold:
            # A request after the due one (a crawler with several in flight) waits until the kill has been sent:
            # the site answers nothing past the point, so a harness slow to send the signal (a loaded machine)
            # cannot let the crawl go on past it. Once the kill lands, there is no one left to answer.
            self._landed.wait(WATCH_WAIT_S)
            return self.fired_at is not None
        return False

    def count_and_kill_if_due(self, path: str) -> bool:
        """The site's hook for `r5`: True when this request's start was killed before its answer (the site then
        logs the answer as delivered to no one, and no check takes the page for fetched)."""
        held = self.count(path)
        return self.kill_if_due(path) or held

    def kill_if_due(self, path: str) -> bool:
        with self._lock:
            # The request's own number, not the count now: later requests may have arrived while it was answered.
            if self._fired or getattr(self._arrived, "number", None) != self.index:
                return False
            self._fired = True
        try:
            # The site's thread holds this request's answer until the start is known, so the kill stays exact.
            if not self._watched.wait(WATCH_WAIT_S) or self.start is None:
                return False  # never watched (the start failed to spawn): the point did not fire, and says so
            self.fired_at = time.monotonic()
            self.start.kill_now()
            return True
        finally:
            self._landed.set()
