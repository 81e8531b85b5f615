"""`r5`, `r5+`: SIGKILL when the site receives the start's 5th request, before it answers (exact), or
as soon as it has written the answer (`+`).

`r5+` is not exact: the scraper races the signal and has sometimes stored the page already (seen
here with a pre-forked start). The site cannot see inside the scraper; for an exact point after the
answer, use a line point.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from harness.faults.points import Armed, DesignLike, PointKind, register


@register
@dataclass(frozen=True)
class AtRequest(PointKind):
    index: int  # 1-based, counting the start's own requests
    after_response: bool = False  # False: before the site answers; True: once the answer is written

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

    def arm(self, site: Any) -> Armed:
        return RequestTrigger(self, site)


class RequestTrigger:
    """Called by the site's threads: SIGKILLs the start's group at its `index`-th request, before or after
    the answer."""

    def __init__(self, point: AtRequest, site: Any) -> None:
        self.index = point.index
        self.site = site
        self.start: Any = None  # a harness.running.processes.Start
        self.fired_at: float | None = None
        self._seen = 0
        self._fired = False
        self._lock = threading.Lock()
        if point.after_response:
            site.set_request_hook(self.count, after_sent=self.kill_if_due)
        else:
            site.set_request_hook(self.count_and_kill_if_due)

    def watch(self, start: Any) -> None:
        self.start = start

    def disarm(self) -> None:
        self.site.set_request_hook(None)

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
