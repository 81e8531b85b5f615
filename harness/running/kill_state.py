"""What the store held the moment a start died: the crash state a kill reached, read while nothing runs.

A PASS is a claim about the crash states a crawler was killed in. A kill's time says little about that
(a framework that flushes its items every second, killed 0.5 s after each start's first request, is
killed ten times in one state: nothing stored yet). So after every kill, with the start's whole process
group dead and before the next start, the runner reads the store as the checker will at the end, and
writes what it held into the `kill` event: `store_rows` (rows, duplicates included; None when it could not
be read, say a torn JSON file), `store_bytes` (the store file's or folder's size) and `store_mtime_ns` (its
latest modification, SQLite's -wal and -journal files included: a write that adds no byte still moves it);
both None for a store kept by a server. The difference from the kill before is what the killed start had
written and stored (harness/check/kill_phases.py), which the report tabulates per killed start.

Reading is cheap (the store is a few hundred rows) and never changes it: the kinds' readers open files
read-only and query servers with SELECTs and reads.
"""

from __future__ import annotations

import os
from typing import Any

from killtest.harness.design.model import Design
from killtest.harness.design.stores import kind_of, stored_records


def store_state(design: Design, location: str) -> dict[str, Any]:
    """`store_rows` and `store_bytes` of the store at `location` now; neither raises."""
    try:
        rows: int | None = len(stored_records(design, location))
    except Exception:  # noqa: BLE001 - a store torn by the kill (half a JSON line, a locked file) reads as unknown
        rows = None
    if kind_of(design.store.kind).server is not None:
        return {"store_rows": rows, "store_bytes": None, "store_mtime_ns": None}
    sizes = [(status.st_size, status.st_mtime_ns) for status in _files(location)]
    return {"store_rows": rows, "store_bytes": sum(size for size, _ in sizes),
            "store_mtime_ns": max((mtime for _, mtime in sizes), default=None)}


def _files(location: str) -> list[os.stat_result]:
    """The stat of the store's file and its SQLite companions, or of every file under its folder."""
    paths = [location, location + "-wal", location + "-journal"]
    if os.path.isdir(location):
        paths = [os.path.join(folder, name) for folder, _, names in os.walk(location) for name in names]
    found = []
    for path in paths:
        try:
            found.append(os.stat(path))
        except OSError:  # not there (yet), or gone between the walk and the stat
            pass
    return found
