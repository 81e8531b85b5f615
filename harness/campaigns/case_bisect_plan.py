"""What a bisection kills at on every release, and the releases the registry lacks: a case's bisect.toml.

`killtest cases --bisect` decides every release at the same write (campaigns/case_bisect.py). A store write
named by its number (`w14`) is the 14th write of a start, another write on another release; a write named by
its file (`w2:storage/request_queues/default/<id>.json`, faults/file_aims.py) is the same file's on every
release whose file is named alike. A case whose schedule names writes by number declares the point its
bisection kills at here:

    [point]
    schedule = "w2:storage/request_queues/default/HS6QWmr3mrfll6M.json"
    why = "the request file of /product/3 (its name a hash of the uniqueKey the crawler sets) ..."

and the releases upstream made in the range that the registry reachable here does not list, each quoted from
upstream's changelog with a link (case_registry.missing_between keeps those the registry lacks):

    [[missing]]
    version = "3.10.0"
    date = "2024-05-16"
    link = "https://github.com/apify/crawlee/blob/<commit>/CHANGELOG.md#3100-2024-05-16"
    changes = ["make `RequestQueue` v2 the default queue ... (#2390)"]
    others = 15  # the changelog's other entries for it, not quoted

Pure but for reading the file.
"""

from __future__ import annotations

import os
import sys

from killtest.harness.design.case_spec import Case
from killtest.harness.design.registry import PROJECT_ROOT
from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import parse_point
from killtest.harness.faults.points.store_write import AtStoreWrite

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package (case_spec reads case.toml alike)
    import tomli as tomllib


def bisect_plan(case: Case) -> dict:
    """The case's bisect.toml as {"schedule", "why", "missing"}; {} when it has none. A one-line error for a
    malformed one, or a point that names a store write by its number."""
    path = os.path.join(case.folder, "bisect.toml")
    if not os.path.exists(path):
        return {}
    where = os.path.relpath(path, PROJECT_ROOT)
    try:
        with open(path, "rb") as src:
            data = tomllib.load(src)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise KilltestError(f"{where}: {error}") from None
    point, notes = data.get("point", {}), data.get("missing", [])
    if set(data) - {"point", "missing"} or not isinstance(point, dict) or not isinstance(notes, list):
        raise KilltestError(f"{where}: a [point] table (schedule, why) and [[missing]] tables are expected")
    schedule, why = point.get("schedule", ""), point.get("why", "")
    if point and (not isinstance(schedule, str) or not schedule or not isinstance(why, str) or not why.strip()):
        raise KilltestError(f"{where}: [point] names its schedule and says why it is the same write on every"
                            " release (schedule = \"w2:<file>\", why = \"...\")")
    if schedule and numbered_writes(schedule):
        raise KilltestError(f"{where}: [point] {schedule} names a store write by its number; name it by its file")
    for note in notes:
        if not (isinstance(note, dict) and isinstance(note.get("version"), str) and isinstance(note.get("link"), str)
                and isinstance(note.get("changes"), list) and all(isinstance(c, str) for c in note["changes"])
                and isinstance(note.get("others", 0), int) and isinstance(note.get("date", ""), str)):
            raise KilltestError(f"{where}: each [[missing]] has a version, a link and changes (a list of the"
                                f" changelog's lines), not {note!r}")
    return {"schedule": schedule, "why": why.strip(), "missing": notes}


def schedule_of(args: tuple[str, ...] | list[str]) -> str:
    """The `--schedule` a case's args give ("" for none)."""
    for i, word in enumerate(args):
        if word == "--schedule" and i + 1 < len(args):
            return args[i + 1]
        if word.startswith("--schedule="):
            return word.partition("=")[2]
    return ""


def with_schedule(args: tuple[str, ...], schedule: str) -> tuple[str, ...]:
    """`args` with its `--schedule` given as `schedule` (added when it has none)."""
    kept, skip = [], False
    for word in args:
        if skip or word.startswith("--schedule="):
            skip = False
            continue
        skip = word == "--schedule"
        if not skip:
            kept.append(word)
    return ("--schedule", schedule, *kept)


def numbered_writes(schedule: str) -> list[str]:
    """The points of `schedule` that name a store write by its place in the start's order (`w14`, `aw14`,
    `xw14`): another write on another release. A file (`w2:FILE`), a connection or a declared server is not."""
    points = [parse_point(text) for text in schedule.split(",") if text.strip()]
    return [p.spec for p in points if isinstance(p, AtStoreWrite) and p.file is None and p.connection is None
            and p.server is None]
