"""The history of one run: every start, kill, exit, request and scraper event, in time order.

The runner writes it; the checker and the report read only it (and the store). Times are seconds
since the run began, on the monotonic clock that the scraper, the site and the runner share.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from harness.files import write_atomically


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

    def sorted(self) -> "History":
        return History(sorted(self.events, key=lambda e: e["t"]))

    def write_jsonl(self, path: str) -> None:
        """Write atomically: a reader finds the whole history or none, never half of it."""
        write_atomically(path, "".join(json.dumps(event, sort_keys=True) + "\n" for event in self.events))

    @classmethod
    def read_jsonl(cls, path: str) -> "History":
        with open(path, encoding="utf-8") as src:
            return cls([json.loads(line) for line in src if line.strip()])
