"""Where a crash point's kill landed, in the user's own terms, and the kind of place it is.

`w51` means nothing to a user; "before the 2nd write to dataset/000001.json, 31 bytes at offset 30,
after request 9 (/product/4)" does; its after twin `aw51` is "after the 2nd write to ..." (its place too: a
kill after a write is another place than one before it). A store write is described from the recording that aimed it
(harness/faults/store_writes.py: its system call, file, count and size), the request from the point's
own run (its history: the killed start's last request before the kill). A request point names its
page, a line point its line. The kind of place (the same words with the kill's own counts dropped and
file numbers folded) is what harness/check/distinct.py groups failures by.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from killtest.harness.check.distinct import folded, nth, request_before, request_words
from killtest.harness.faults.file_aims import number_of
from killtest.harness.faults.points import KillPoint
from killtest.harness.faults.points.after_store_write import AfterStoreWrite
from killtest.harness.faults.points.line import AtLine
from killtest.harness.faults.points.request import AtRequest
from killtest.harness.faults.points.store_write import AtStoreWrite
from killtest.harness.faults.store_writes import Recording
from killtest.harness.history import History


def describe(point: KillPoint, history: History, recording: Any = None, kill: dict | None = None) -> tuple[str, str]:
    """(where the kill landed, the kind of place) for a point; ("", "") for a kind not described. `kill` is the
    point's own kill (or power cut) event; by default the run's first, as in a one-point schedule."""
    cut = "power cut " if point.spec.startswith("x") else ""  # xw5, xr5: the power-cut kinds
    kill = kill or history.first("kill") or history.first("power_lost")
    where, place = _words(point, history, recording, kill)
    if not where:
        return "", place
    return cut + where, cut + place


def describe_schedule(points: Sequence[KillPoint], history: History, recording_before: Callable[[str], Any],
                      located: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(where, place) of a schedule of several points (a fuzzed one): each point that landed, in its own
    words, and the kinds of place they landed at, each once, sorted: `r3,w9` and `w12,r4` at the same kinds
    of place are one place. `recording_before(specs)` is the recording that aimed a store write after the
    schedule's points `specs` (comma-joined), as write_plans caches it; `located`: a store-write kill's place in the
    program, by its spec (campaigns/fuzz_locate.py), said after it. ("", "") when no point is described."""
    kills = [e for e in history.events if e["type"] in ("kill", "power_lost")]
    words, places = [], []
    for i, point in enumerate(points):
        kill = next((e for e in kills if e.get("point") == point.spec), None)
        if kill is None:
            continue  # it did not land (or a pause, a drift: nothing killed)
        kills = [e for e in kills if e.get("start") != kill.get("start")]
        where, place = describe(point, history, recording_before(",".join(p.spec for p in points[:i])), kill)
        said = (located or {}).get(point.spec)
        where = f"{where}, {said}" if where and said else where
        if where:
            words.append((point.spec, where))
            places.append(place)
    if len(words) == 1 and len(points) == 1:
        return words[0][1], places[0]
    return "; ".join(f"{spec} {where}" for spec, where in words), " and ".join(sorted(set(places)))


def schedule_words(points: Sequence[KillPoint], history: History, cache: dict, design: str,
                   located: Mapping[str, str] | None = None) -> dict[str, str]:
    """`describe_schedule` as a fuzzed trial keeps it ({"where", "place"}), its recordings from write_plans's
    cache (keyed by the design's name and the points before); `located`: its store-write kills' places in the
    program (campaigns/fuzz_locate.py)."""
    where, place = describe_schedule(points, history, lambda before: cache.get((design, before)), located)
    return {"where": where, "place": place}


def logical_write(point: KillPoint, recording: Any) -> str:
    """The logical write a store-write point lands inside, as points (`w11-w12`: the writes a buffered stream
    made one after another on one open file, faults/store_writes.Recording.logical_write), when it is made of
    several writes; "" otherwise. The lines of its pieces are one failure (check/distinct.py)."""
    if (not isinstance(point, AtStoreWrite) or point.connection is not None or point.server is not None
            or not isinstance(recording, Recording)):
        return ""
    n = number_of(recording, point.index, point.file)
    if n is None:
        return ""
    first, last = recording.logical_write(n)
    kind = point.spec[:point.spec.index("w") + 1]  # `w`, `xw` for a power cut, `aw` for an after twin
    return f"{kind}{first}-{kind}{last}" if last > first else ""


def _words(point: KillPoint, history: History, recording: Any, kill: dict | None) -> tuple[str, str]:
    if isinstance(point, AtStoreWrite):
        after = request_words(history, kill) if kill is not None else ""
        side = "after" if isinstance(point, AfterStoreWrite) else "before"  # the kill's side of the write
        if point.server is not None:  # a server the design declares (`w3:redis`): its write commands
            command = f"write command {point.index} to the {point.server} server"
            return (f"{side} {command}, {after}" if after else f"{side} {command}",
                    f"{side} a command to the {point.server} server")
        if point.connection is not None or not isinstance(recording, Recording):
            statement = f"statement {point.index}" + (f" of connection {point.connection}" if point.connection else "")
            return (f"{side} store {statement}, {after}" if after else f"{side} store {statement}",
                    "a statement to the store" if side == "before" else "after a statement to the store")
        n = number_of(recording, point.index, point.file)
        write, place = recording.describe_write(n) if n is not None else ("", "")
        if not write:
            return "", "a write past the last"
        return f"{side} {write}, {after}" if after else f"{side} {write}", f"{side} the {place}"
    if isinstance(point, AtRequest):
        made = request_before(history, kill["t"], kill.get("start", 0)) if kill else None
        path = made[1] if made else "?"
        if point.after_response:
            return (f"at the first store write after request {point.index} ({path})",
                    f"after the answer to a request for {folded(_page(path))}")
        return f"on request {point.index} ({path}), before its answer", f"on a request for {folded(_page(path))}"
    if isinstance(point, AtLine):
        named = f" ({point.anchor})" if point.anchor else ""
        return (f"before the {nth(point.hit)} run of {point.path} line {point.line}{named}",
                f"at {point.path} line {point.line}{named}")
    return "", ""


def _page(path: str) -> str:
    """A page's kind: its path without the query's values (`/?page=2` -> `/?page=`)."""
    head, question, query = path.partition("?")
    return head + (question + "&".join(part.split("=")[0] + "=" for part in query.split("&")) if question else "")
