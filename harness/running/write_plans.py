"""Store-write points made exact: record the start a point will end, then aim strace at the write.

A `w5` or `r5+` point names a write by its place in the start's own order of store writes; strace
counts per thread and per system call (harness/faults/store_writes.py). So before the run, the same
schedule's earlier points are run again, and the start the point will end is run to the end under
strace's recording (`RecordStart`); its log says which call the point is, and the point is replaced
by one carrying that `InjectionPlan`. For a schedule of exact points the recorded start is the very
start the point will end (the runs are deterministic), which is what makes the point exact.
A timed point before it (t, d) makes the recorded start one sample of many: the point stays
reproducible in what it injects, not in what that hits.

Recordings are cached by the design and the schedule before the point, so explore records once to aim.
To list the points it offers, explore records an uninterrupted first start twice and keeps the writes
both agree on (`stable_file_writes`, store_writes.agreeing_writes): a design whose writes depend on the
clock (a timer thread, a periodic save) has a `w<n>` that names another write on the next recording,
which a `killtest replay` of it would then kill at. A replay records once: its recording aims its own run.

A PostgreSQL or Redis store's point needs no aiming: the start's own proxy counts its statements as they
come (harness/faults/command_gate.py). Explore records two uninterrupted starts through the proxy and
offers the statements that came the same on both (`stable_statements`): `w5` for a design on one
connection, `w3:c2` (the 3rd statement of its 2nd connection) for one on several.

A server the design declares besides its store (`[servers] redis`: a queue in Redis, records in a file) is
recorded the same way, through a proxy pointed at its address (`RecordStart(server=...)`), and explore offers
each of its write commands that came in the same order on both recordings: `w3:redis`
(`declared_server_points`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from killtest.harness import lifeline
from killtest.harness.design.model import Design
from killtest.harness.errors import KilltestError
from killtest.harness.faults.file_aims import offered_writes, plan_for_file_write
from killtest.harness.faults.points import KillPoint, StartOptions
from killtest.harness.faults.points.request import AtRequest
from killtest.harness.faults.points.store_write import AtStoreWrite, RecordStart, require_strace, server_store
from killtest.harness.faults.schedule import KillSchedule
from killtest.harness.faults.store_commands import parse_command_log, per_connection, stable_writes
from killtest.harness.faults.store_writes import Recording, agreeing_writes, parse_recording
from killtest.harness.running.orchestrator import Stage, run_phase
from killtest.harness.running.runner import RunSettings

RecordingCache = dict[tuple[str, str], Any]  # a Recording (file store), a command log (server's), or None


@dataclass(frozen=True)
class _RecordAndKeepValues(RecordStart):
    """The recording start, which also notes the work dir it ran in: the log's paths are read against it."""

    def start_options(self, values: Mapping[str, str] | None = None) -> StartOptions:
        assert values is not None
        with open(self.log_path + ".values.json", "w", encoding="utf-8") as out:
            json.dump(dict(values), out)
        return super().start_options(values)


def needs_recording(point: KillPoint) -> bool:
    """A store-write point, or an `r5+`, not yet turned into strace's count."""
    if isinstance(point, AtStoreWrite):
        return not point.resolved
    return isinstance(point, AtRequest) and point.after_response and not point.resolved


def resolve_schedule(schedule: KillSchedule, design: Design, on: Stage, settings: RunSettings, *,
                     work_dir: str | None = None, cache: RecordingCache | None = None) -> KillSchedule:
    """The schedule with each store-write and `r5+` point aimed at its write; one-line errors for what cannot be."""
    if not any(needs_recording(p) for p in schedule.points):
        return schedule
    on_server = server_store(design)
    cache = {} if cache is None else cache
    resolved: list[KillPoint] = []
    for point in schedule.points:
        if needs_recording(point):
            if on_server or getattr(point, "server", None) is not None:
                # r5+: no file to aim at, the site's racing signal, as documented; w5: its proxy counts.
                point.validate([design], settings.workers)
                resolved.append(dataclasses.replace(point, resolved=True) if isinstance(point, AtStoreWrite) else point)
                continue
            point.validate([design], settings.workers)  # strace installed, a file store, one worker
            recording = record(design, tuple(resolved), on, settings, work_dir, cache)
            point = aimed(point, recording)
        resolved.append(point)
    return dataclasses.replace(schedule, points=tuple(resolved))


def record(design: Design, before: tuple[KillPoint, ...], on: Stage, settings: RunSettings,
           work_dir: str | None, cache: RecordingCache) -> Any:
    """The store writes of the start that follows `before`'s points, run to the end: a file store's
    Recording, a server store's counted statements (`parse_command_log`); None if no such start."""
    key = (design.name, ",".join(p.spec for p in before))
    if key in cache:
        return cache[key]
    if not server_store(design):
        require_strace("w<n>")
    with lifeline.temp_dir(prefix="killtest-record-") as logs:  # swept if the harness dies mid-recording
        log = os.path.join(logs, "strace.log")
        run_phase(on, design, KillSchedule(seed=None, points=(*before, _RecordAndKeepValues(log))), settings,
                  work_dir=work_dir, prefix="killtest-record-")
        if not os.path.exists(log):
            recording = None  # the crawl finished before that start
        else:
            with open(log + ".values.json", encoding="utf-8") as values, open(log, encoding="utf-8",
                                                                              errors="replace") as text:
                found = json.load(values)
                recording = parse_command_log(text.read()) if found.get("dsn") else parse_recording(text.read(),
                                                                                                     found)
    cache[key] = recording
    return recording


def aimed(point: Any, recording: Recording | None) -> KillPoint:
    """`point` carrying its injection plan; a one-line KilltestError when strace cannot reach that write."""
    if recording is None:
        return dataclasses.replace(point, plan=None, resolved=True)
    if isinstance(point, AtStoreWrite) and point.file is not None:  # `w2:FILE`: by its file, any thread
        try:
            return dataclasses.replace(point, plan=plan_for_file_write(recording, point.file, point.index),
                                       resolved=True)
        except ValueError as error:
            raise KilltestError(f"kill point {point.spec}: {error}") from None
    write = point.index if isinstance(point, AtStoreWrite) else recording.write_after_request(point.index)
    if write is not None and not isinstance(point, AtStoreWrite):  # `r5+`: the first write after it strace can
        # reach (a threaded crawler's other thread may reach that count first); none: refused, as `w<n>` is
        write = next((n for n in recording.reachable_writes() if n >= write), write)
    if write is None:
        return dataclasses.replace(point, plan=None, resolved=True)
    try:
        plan = recording.plan_for_write(write)
    except ValueError as error:
        reachable = ", ".join(f"w{n}" for n in recording.reachable_writes()[:12])
        raise KilltestError(f"kill point {point.spec}: {error}; points it can reach: {reachable or 'none'}") from None
    return dataclasses.replace(point, plan=plan, resolved=True)


def store_write_points(design: Design, on: Stage, settings: RunSettings, work_dir: str | None = None,
                       cache: RecordingCache | None = None) -> list[KillPoint]:
    """`w1`..`wN`: every store write of a first start that strace (a file store) or the start's proxy (a
    PostgreSQL or Redis store: every counted statement) can kill at, and that two recordings agree on; then
    each declared server's write commands (`w3:redis`: `declared_server_points`).

    None for a file store on a machine without strace, or more than one worker."""
    import shutil

    if settings.workers > 1:
        return []
    cache = {} if cache is None else cache
    declared = declared_server_points(design, on, settings, work_dir, cache)
    if not server_store(design) and shutil.which("strace") is None:
        return declared
    return own_store_points(design, on, settings, work_dir, cache) + declared


def own_store_points(design: Design, on: Stage, settings: RunSettings, work_dir: str | None,
                     cache: RecordingCache) -> list[KillPoint]:
    """The store's own writes of `store_write_points`."""
    on_server = server_store(design)
    recording = record(design, (), on, settings, work_dir, cache)
    if recording is None:
        return []
    if on_server:
        where = per_connection(recording)
        one_connection = len({connection for connection, _ in where}) == 1
        return [AtStoreWrite(where[n - 1][1], resolved=True, connection=None if one_connection else where[n - 1][0])
                for n in stable_statements(design, on, settings, work_dir, cache)]
    return [aimed(AtStoreWrite(n) if by is None else AtStoreWrite(by[1], file=by[0]), recording)
            for n, by in stable_file_writes(design, on, settings, work_dir, cache).items()]


def declared_server_points(design: Design, on: Stage, settings: RunSettings, work_dir: str | None,
                           cache: RecordingCache) -> list[KillPoint]:
    """`w1:redis`..: each write command to a server the design declares that two uninterrupted first starts sent
    in the same order, up to it (the proxy counts them over all the start's connections)."""
    points: list[KillPoint] = []
    for server in design.servers:
        first, second = (declared_commands(design, server, on, settings, work_dir, cache, again)
                         for again in (False, True))
        agreed = next((n for n, pair in enumerate(zip(first, second)) if pair[0] != pair[1]), min(len(first),
                                                                                              len(second)))
        points += [AtStoreWrite(n, resolved=True, server=server) for n in range(1, agreed + 1)]
    return points


def declared_commands(design: Design, server: str, on: Stage, settings: RunSettings, work_dir: str | None,
                      cache: RecordingCache, again: bool = False) -> list[tuple[int, str]]:
    """The write commands an uninterrupted first start sent to its declared `server`, (connection, label) in order
    (cached as `(design, "#redis")`, the second recording as `(design, "#redis#again")`)."""
    key = (design.name, f"#{server}" + ("#again" if again else ""))
    if key not in cache:
        with lifeline.temp_dir(prefix="killtest-record-") as logs:
            log = os.path.join(logs, "commands.log")
            run_phase(on, design, KillSchedule(seed=None, points=(RecordStart(log, server=server),)), settings,
                      work_dir=work_dir, prefix="killtest-record-")
            if not os.path.exists(log):
                cache[key] = []  # the crawl finished before that start
            else:
                with open(log, encoding="utf-8") as text:
                    cache[key] = parse_command_log(text.read())
    return cache[key]


def again(design: Design, on: Stage, settings: RunSettings, work_dir: str | None, cache: RecordingCache) -> Any:
    """A second recording of the design's uninterrupted first start, cached apart from the first."""
    key = (design.name, "#again")
    if key not in cache:
        cache[key] = record(design, (), on, settings, work_dir, {})
    return cache[key]


def stable_file_writes(design: Design, on: Stage, settings: RunSettings, work_dir: str | None,
                       cache: RecordingCache) -> dict[int, tuple[str, int] | None]:
    """The writes of a file store's first start that are the same on two recordings, in the first's order: n ->
    None for a `w<n>` (`agreeing_writes`: the same system call and count, to the same file, after the same
    writes), (file, k) for a `w<k>:<file>` (file_aims.offered_writes: a thread pool's, named by their file)."""
    first: Recording | None = record(design, (), on, settings, work_dir, cache)
    second: Recording | None = again(design, on, settings, work_dir, cache)
    if first is None or second is None:
        return {}
    return offered_writes(first, second, agreeing_writes(first, second))


def stable_statements(design: Design, on: Stage, settings: RunSettings, work_dir: str | None,
                      cache: RecordingCache) -> list[int]:
    """The statements of a first start that come the same on two uninterrupted starts (`stable_writes`).

    The proxy counts each connection's statements in order. A design that sends them on one connection,
    one at a time (idempotent-pg), has them all. One with timers on its connections (BullMQ renews locks
    and looks for stalled jobs on its own clock, and polls for the next job) keeps those of the
    connections whose statements do not depend on the clock."""
    first: list[tuple[int, str]] = record(design, (), on, settings, work_dir, cache) or []
    return stable_writes(first, again(design, on, settings, work_dir, cache) or [])
