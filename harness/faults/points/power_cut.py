"""`x0.4`, `xr5`, `xr5+`, `xw5`, `xaw5`: a power cut, fired like `t0.4`, `r5`, `r5+`, `w5` or `aw5` (any language).

An `x` in front of a timed, request or store-write point keeps that point's trigger and turns its kill
into a power cut: the runner mounts the power-loss file system (killtest.harness.faults.power_loss)
over the run's work dir for the whole run; when the trigger fires, every process of the start is
SIGKILLed (the machine went dark), the file system forgets every byte and name no fsync made durable,
the history records `power_lost` with what was lost, and the next start runs on what survived. The
mount is left before the store is read, which puts the surviving files back in the work dir.

Why `x`: t r w l d s p are taken, `c` already means a connection in `w7:c2`, and an `x` in front keeps
the trigger's own letter readable (`xw5` is `w5` with the power cut). The classes below are the timed,
request and store-write kinds themselves with the cut added, so their triggers, the recording that
aims `xw5` and `xr5+` (harness/running/write_plans.py) and fuzz's notion of exactness are theirs.

Refused in one line where FUSE is unavailable (`power_loss.unavailable_reason()`), for a store kept by
a PostgreSQL or Redis server (its data lives in the server's directory, not under the work dir), for
a store outside the work dir, and with `@<worker>` (a power cut takes the whole machine).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from killtest.harness.design.model import Launch
from killtest.harness.design.stores import kind_of
from killtest.harness.errors import KilltestError
from killtest.harness.faults import power_loss
from killtest.harness.faults.points import DesignLike, PointKind, Target, register
from killtest.harness.faults.points.after_store_write import AfterStoreWrite
from killtest.harness.faults.points.request import AtRequest
from killtest.harness.faults.points.store_write import AtStoreWrite
from killtest.harness.faults.points.timed import AfterDelay

PREFIX = "x"
_PROBE_DIR = "/killtest-work-dir"  # where a probe launch puts the work dir, to see where the store lands


def refuse_what_cannot_lose_power(spec: str, designs: Sequence[DesignLike]) -> None:
    """A one-line KilltestError when the power cannot be cut here, or not under these designs' stores."""
    reason = power_loss.unavailable_reason()
    if reason is not None:
        raise KilltestError(f"kill point {spec} cuts the power through a FUSE file system over the work dir,"
                            f" which cannot run here: {reason}")
    for design in designs:
        server = kind_of(design.store.kind).server
        if server is not None:
            raise KilltestError(f"kill point {spec} cuts the power under the run's work dir, but design"
                                f" {design.name!r} keeps its records in a {server} server's own directory:"
                                " use a file store (sqlite, jsonl, json_files)")
        if not store_under_work_dir(design):
            raise KilltestError(f"kill point {spec} cuts the power under the run's work dir, but design"
                                f" {design.name!r} keeps its store outside it ({design.store.path}):"
                                " put store.path under {work_dir}")


def store_under_work_dir(design: DesignLike) -> bool:
    """Whether the design's store path lands under the run's work dir, wherever that is."""
    values = getattr(design, "values", None)
    if values is None:  # not a whole Design (a test's stand-in): its store path is checked at run time
        return True
    path = values(Launch(base_url="http://127.0.0.1:1", work_dir=_PROBE_DIR, lease_s=1.0))["store"]
    return os.path.normpath(path).startswith(_PROBE_DIR + os.sep)


class _CutsThePower(PointKind):
    """What the three power-cut points add to the kind they are: the mount, the refusals, the cut.
    It comes first among their bases, so `super()` is the trigger's own kind."""

    needs_power_loss_mount: ClassVar[bool] = True

    @property
    def spec(self) -> str:
        inner = super().spec
        return PREFIX + (inner[len(AfterDelay.PREFIX):] if isinstance(self, AfterDelay) else inner)

    def validate(self, designs: Sequence[DesignLike], workers: int) -> None:
        super().validate(designs, workers)
        refuse_what_cannot_lose_power(self.spec, designs)

    def check_runnable(self, design: DesignLike, workers: int, can_restart_store: bool) -> None:
        super().check_runnable(design, workers, can_restart_store)
        refuse_what_cannot_lose_power(self.spec, [design])

    def after_kill(self, target: Target) -> None:
        target.lose_power()


@dataclass(frozen=True)
class PowerCutAfterDelay(_CutsThePower, AfterDelay):
    """`x0.4`: the power goes 0.4 s after the start was spawned (sampled, like `t0.4`)."""


@dataclass(frozen=True)
class PowerCutAtRequest(_CutsThePower, AtRequest):
    """`xr5`, `xr5+`: the power goes at the start's 5th request (before the answer, or at its first store write
    after it), exactly as `r5` and `r5+` kill."""


@dataclass(frozen=True)
class PowerCutAtStoreWrite(_CutsThePower, AtStoreWrite):
    """`xw5`: the power goes on entering the start's 5th store write, before it happens (strace, as `w5`)."""


@dataclass(frozen=True)
class PowerCutAfterStoreWrite(_CutsThePower, AfterStoreWrite):
    """`xaw5`: the power goes once the start's 5th store write is done, before its next step (as `aw5` kills):
    the write happened, and what no fsync made durable of it and before it is gone."""


@register
class PowerCut(PointKind):
    """The registered kind: its text names one of the three points above."""

    PREFIX = PREFIX
    FORM = ("x<seconds>, xr<request number>[+], xw<store write number>[:<file under the work dir>],"
            " xaw<store write number>[:<file under the work dir>]")
    EXAMPLES = ("x0.4", "xr5", "xw5")
    ORDER = 40

    @classmethod
    def parse(cls, text: str, design: DesignLike | None = None) -> PointKind:
        inner = text[len(PREFIX):]
        if "@" in text or (":" in text and not inner.startswith((AtStoreWrite.PREFIX, AfterStoreWrite.PREFIX))):
            raise ValueError(text)  # a power cut takes the whole machine: no worker, no connection
        if inner.startswith(AfterStoreWrite.PREFIX):  # `xaw5`: after the write, as `aw5`
            after = AfterStoreWrite.parse(inner)
            if after.connection is not None or after.server is not None:
                raise ValueError(text)
            return PowerCutAfterStoreWrite(after.index, file=after.file)
        if inner.startswith(AtRequest.PREFIX):
            request = AtRequest.parse(inner)
            return PowerCutAtRequest(request.index, after_response=request.after_response)
        if inner.startswith(AtStoreWrite.PREFIX):
            write = AtStoreWrite.parse(inner)
            if write.connection is not None or write.server is not None:  # a server's command: no power to cut
                raise ValueError(text)
            return PowerCutAtStoreWrite(write.index, file=write.file)  # `xw2:FILE`: by file, as `w2:FILE`
        return PowerCutAfterDelay(AfterDelay.parse(AfterDelay.PREFIX + inner).delay_s)
