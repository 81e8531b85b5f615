"""`w5`: SIGKILL the start on entering its 5th write-type system call to the store (exact, any language).

A write-type call is a write, pwrite, writev, fsync/fdatasync, rename, truncate or unlink
(harness/faults/store_writes.py) to a file under the design's work dir or store path. The point is
carried out by strace's fault injection, so it reaches any program and its children, and the kill
lands before the write happens. strace counts per thread and per system call, so the harness first
records the start running to the end and turns "the 5th write" into "pwrite64 number 3 of its thread"
(harness/running/write_plans.py resolves it; `InjectionPlan`); a write that another thread or process
would reach first by that count is refused with a one-line error.

Not for PostgreSQL or Redis stores yet: their writes are statements sent to a server, which a file
path cannot name. Refused with a one-line error, as is a machine without strace.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from killtest.harness.design.stores import kind_of
from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import DesignLike, PointKind, StartOptions, register
from killtest.harness.faults.store_writes import InjectionPlan, recording_prefix

GATE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "write_gate.py")


def require_strace(spec: str) -> None:
    """A one-line KilltestError where strace is not installed."""
    if shutil.which("strace") is None:
        raise KilltestError(f"kill point {spec} needs strace, which is not installed here (apt-get install strace)")


def require_file_store(spec: str, designs: Sequence[DesignLike]) -> None:
    """A one-line KilltestError for a design whose store is a server's (its writes are statements, not files)."""
    for design in designs:
        if kind_of(design.store.kind).server is not None:
            raise KilltestError(f"kill point {spec}: design {design.name!r} keeps a {design.store.kind} store, whose"
                                " writes are statements sent to a server; store-write points reach file stores only")


def gate_options(plan: InjectionPlan | None, values: Mapping[str, str] | None) -> StartOptions:
    """The start under the write gate (harness/faults/write_gate.py); no gate when the start never gets there."""
    if plan is None:
        return StartOptions()  # the start makes fewer store writes: it runs to the end
    assert values is not None, "a store-write point needs the start's work dir"
    return StartOptions(command_prefix=(sys.executable, "-S", GATE, plan.syscall, str(plan.when),
                                        *plan.absolute_paths(values), "--"))


@register
@dataclass(frozen=True)
class AtStoreWrite(PointKind):
    index: int  # 1-based, counting the start's own store writes
    # Filled in by a recording (harness/running/write_plans.py): what strace injects. None once resolved:
    # the start makes fewer store writes, so the point is never reached.
    plan: InjectionPlan | None = field(default=None, compare=False)
    resolved: bool = field(default=False, compare=False)

    PREFIX = "w"
    FORM = "w<store write number>"
    EXAMPLES = ("w5",)
    ORDER = 25

    @classmethod
    def parse(cls, text: str, design: DesignLike | None = None) -> AtStoreWrite:
        index = int(text[len(cls.PREFIX):])
        if index < 1:
            raise ValueError(text)
        return cls(index)

    @property
    def spec(self) -> str:
        return f"w{self.index}"

    def validate(self, designs: Sequence[DesignLike], workers: int) -> None:
        super().validate(designs, workers)
        require_strace(self.spec)
        require_file_store(self.spec, designs)
        if workers > 1:
            raise KilltestError(f"kill point {self.spec} counts one start's writes in order; with --workers {workers}"
                                " that order is a race: use one worker")

    def check_runnable(self, design: DesignLike, workers: int, can_restart_store: bool) -> None:
        self.validate([design], workers)
        if not self.resolved:
            raise KilltestError(f"kill point {self.spec} is turned into strace's count by a recording run first:"
                                " run it with killtest replay, explore or fuzz")

    def start_options(self, values: Mapping[str, str] | None = None) -> StartOptions:
        return gate_options(self.plan, values)


@dataclass(frozen=True)
class RecordStart(PointKind):
    """Not a kill: the start runs to the end under strace, which records its writes and requests to `log_path`.

    Not registered, so no schedule text names it; harness/running/write_plans.py puts it after the points
    of a schedule it resolves."""

    log_path: str

    PREFIX = "record:"
    FORM = "record"
    EXAMPLES = ()

    @property
    def spec(self) -> str:
        return "record"

    def start_options(self, values: Mapping[str, str] | None = None) -> StartOptions:
        return StartOptions(command_prefix=recording_prefix(self.log_path))
