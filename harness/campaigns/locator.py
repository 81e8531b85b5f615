"""Where each kind of failure of an exploration was made in the program, found as the exploration goes
(campaigns/locate.py reads a held write's stack).

Each distinct failure's first point is located, in the same process and stage (with -j N, in the job that found
it; the jobs share what they claimed), whose recording has aimed the point already: read in its own run when the
point before broke (`Locator.reading`), else run once more, only as far as its kill (`held_start`: the start held
at the write has its stack read and is killed; no start finishes the crawl, nothing is checked). It runs in
parallel with -j, needs no recording or site of its own, and its time is the exploration's. At most MAX_LOCATED
kinds of failure a process are located; one line says so past that. A kind's last broken point too
(`Locator.finish`), and later ones read in their own run: two commits at two lines make the same calls on one
journal (one kind, two bugs); its other points take a line only if all located agree.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

from killtest.harness.campaigns.locate import Located, located, stack_reads, why_not, with_locations
from killtest.harness.campaigns.twin_states import located_by_its_neighbour
from killtest.harness.design.model import Design
from killtest.harness.faults.points import KillPoint
from killtest.harness.faults.points.line import shown_path
from killtest.harness.faults.points.store_write import AtStoreWrite
from killtest.harness.faults.schedule import KillSchedule
from killtest.harness.history import History
from killtest.harness.running.orchestrator import Stage, run_phase
from killtest.harness.running.runner import RunSettings
from killtest.harness.running.write_plans import RecordingCache, resolve_schedule

MAX_LOCATED = 10  # kinds of failure a process locates: each costs one more run


def held_start(design: Design, on: Stage, settings: RunSettings, point: KillPoint, work_dir: str | None,
               cache: RecordingCache) -> History:
    """The point's first start once more, as far as its kill (where its held write's stack is read): no start
    after it finishes the crawl, and nothing is checked. A fraction of the point's whole run."""
    schedule = resolve_schedule(KillSchedule(seed=None, points=(point,)), design, on, settings, work_dir=work_dir,
                                cache=cache)
    return run_phase(on, design, schedule, dataclasses.replace(settings, finish=False), work_dir=work_dir,
              prefix="killtest-locate-")


class Locator:
    """As an exploration goes: the source location of the store write of each kind of failure's first point
    (or the one line of `why_not`), by point, in `found`, and at its end (`finish`) of each kind's last broken
    point; `with_locations` puts them in the outcomes' words.

    A kind's first broken point is read in its own run when that can be guessed (`reading`): right after a
    broken point, a store write has its stack read before its kill, for the cost of reading a stack instead of a
    whole run; one at a kind of place a kind was located at keeps its own line (so a kind's last point is
    mostly read already). Otherwise a kind's first is run once more (`after`), its last at the end (`finish`).

    `claims` (a dict shared by -j's processes, parallel.run_jobs) holds the earliest point of each kind a process
    is locating: another process skips a later point of that kind (unless read), and locates an earlier one."""

    def __init__(self, design: Design, claims: Any = None, most: int = MAX_LOCATED) -> None:
        self.design, self.most, self.reason = design, most, why_not(design)
        self.claims: Any = {} if claims is None else claims
        self.found: dict[str, str] = {}
        self.lines: dict[str, str] = {}  # point -> the program's own `FILE:LINE`, where one was found
        self.runs, self.spent_s, self.kinds, self.began = 0, 0.0, 0, time.monotonic()
        self.stacks_read, self.read_s = 0, 0.0  # stacks read in points' own runs, and their time (in spent_s)
        self.read_in_run = 0  # kinds whose first was located by reading the stack in its own run (no run more)
        self._broke_last = False  # the point before broke: the next one may break too
        self._places: set[str] = set()  # kinds of place a broken point was located at
        self._read: dict[str, Located] = {}  # point -> what its own run's stack said
        self._last: dict[str, tuple[str, Callable[[], object]]] = {}  # kind -> its last broken point, a rerun

    @contextlib.contextmanager
    def reading(self, point: KillPoint, place: str) -> Iterator[None]:
        """Around `point`'s own run: read its held write's stack when it may be a new kind's first broken point, or
        a later one of a located kind."""
        if (not self._broke_last or self.reason is not None or not _in_program(point, self.design)
                or (place not in self._places and self.kinds >= self.most)):
            yield
            return
        with stack_reads(self.design) as read:
            yield
        found, seconds = read()
        where, self.spent_s = [None, *found][-1], self.spent_s + seconds
        self.stacks_read, self.read_s = self.stacks_read + len(found), self.read_s + seconds
        if where is not None:
            self._read[point.spec] = where

    def after(self, index: int, point: KillPoint, outcome: Any, run_again: Callable[[], object]) -> None:
        """After `point` (the `index`-th of the exploration) ran: when it broke a promise at a store write in a
        way no earlier point did, locate the write: from its own run's stack when it was read (`reading`), or by
        `run_again()`, one more run of the same point while its held start's stack is read."""
        self._broke_last = not outcome.valid
        read = self._read.pop(point.spec, None)
        if outcome.valid or not _in_program(point, self.design):
            return
        key = repr((tuple(outcome.findings), outcome.place))
        if self.reason is None:
            self._last[key] = (point.spec, run_again)
        if self.claims.get(key, index + 1) <= index:  # an earlier point of this kind is located (or being located)
            if read is not None:  # a later point of a located kind, read in its own run: its own line, for free
                self._keep(point.spec, read)
            return
        self.claims[key] = index
        self.kinds += 1
        self._places.add(outcome.place)
        if self.reason is not None:
            self.found[point.spec] = self.reason
        elif self.kinds > self.most:
            self.found[point.spec] = (f"no source location: only the first {self.most} kinds of failure are"
                                      " located, each one more run")
        elif read is not None:
            self.read_in_run += 1
            self._keep(point.spec, read)
        else:
            self._keep(point.spec, self._run_located(run_again))

    def finish(self) -> None:
        """At the end of a process's points, each kind's last broken point not located yet is, by one more run
        (with -j N, each process's last of the kind): `with_locations` checks a kind's line against it."""
        for spec, run_again in list(self._last.values())[:self.most]:
            if spec not in self.found:
                self._keep(spec, self._run_located(run_again))
        self._last.clear()

    def summary(self) -> dict[str, Any]:
        """What this process located, its runs, its locating time and its own time since it began (`jobs_s`)."""
        return {"found": self.found, "lines": self.lines, "runs": self.runs, "spent_s": self.spent_s,
                "read_in_run": self.read_in_run, "jobs_s": time.monotonic() - self.began,
                "stacks_read": self.stacks_read, "read_s": self.read_s}

    def _run_located(self, run_again: Callable[[], object]) -> Located:
        began, where, self.runs = time.monotonic(), located(self.design, run_again), self.runs + 1
        self.spent_s += time.monotonic() - began
        return where

    def _keep(self, spec: str, where: Located) -> None:
        self.found[spec] = where.words
        if where.line:  # named as a line point names its file, so a located write and a line point meet
            path, _, number = where.line.rpartition(":")
            self.lines[spec] = f"{shown_path(path)}:{number}"


def add_located(exploration: Any, parts: list[dict[str, Any]]) -> None:
    """The processes' `Locator.summary` into the exploration (campaigns/exploration.Exploration): each outcome's
    location words and line (`with_locations`), the runs, the kinds read in their own run, the locating time and
    the time of the processes that ran the points, summed like it (with -j 2 about twice the exploration's)."""
    with_locations(exploration.outcomes, {k: v for part in parts for k, v in part["found"].items()},
                   {k: v for part in parts for k, v in part["lines"].items()})
    exploration.locate_runs = sum(part["runs"] for part in parts)
    exploration.located_in_run = sum(part["read_in_run"] for part in parts)
    exploration.locate_s = sum(part["spent_s"] for part in parts)
    exploration.jobs_s = sum(part["jobs_s"] for part in parts)
    exploration.stacks_read = sum(part["stacks_read"] for part in parts)
    exploration.read_s = sum(part["read_s"] for part in parts)


def _in_program(point: KillPoint, design: Design) -> bool:
    """A store write the program makes (a system call, a statement): not a command to a server the design
    declares (`w3:redis`), which the command proxy holds with no stack of the program's to read, nor an after
    point whose failure takes the next write's line (campaigns/twin_states.py)."""
    return (isinstance(point, AtStoreWrite) and point.server is None
            and not located_by_its_neighbour(point, design))
