"""`aw5`, `aw2:storage/datasets/7.json`, `aw7:c2`, `aw3:redis`: SIGKILL the start once its 5th store write has
COMPLETED, and before its next durable step of any kind (exact, any language).

The twin of `w5` (harness/faults/points/store_write.py): the same write, counted the same way and aimed by the
same recording (harness/running/write_plans.py), but the kill lands just after it instead of just before. A
crawler that saves a record and only then marks its progress durable (removes the request from its queue,
commits its cursor) repeats that record when it dies between the two: the duplicate window, which no
before-point reaches (the point before the next write is the point after this one only when nothing but
that write lies between them; a write's after-point is where ALICE and CrashMonkey crash after each
persistence point as well as before it).

How each gate holds the start at the completed step, so that nothing of the program runs after it:
- a file store by place (`aw5`): strace's `inject=SYSCALL:delay_exit=...:when=N` holds the thread in its
  syscall-exit stop, after the kernel did the call and before the program sees its result; the write gate
  (harness/faults/write_gate.py, `--after`) waits for strace's line of that call's return and SIGKILLs the
  start's group while the thread is held;
- a file store by file (`aw2:FILE`): the file gate (harness/faults/file_gate.py, `--after`) makes the k-th call
  naming FILE itself, on the calling thread's behalf (the same file, the same bytes and flags), and SIGKILLs
  the start while that thread still waits in the kernel for the answer it never gets;
- a server store or a declared server (`aw7`, `aw7:c2`, `aw3:redis`): the command proxy
  (harness/faults/command_gate.py, mode `after`) forwards the n-th counted command, waits for the server's
  whole reply to it (so the command is applied), and SIGKILLs the start before relaying that reply.
In each, other threads and processes of the start run on for the milliseconds the gate takes, as with `w5`.
"""

from __future__ import annotations

from dataclasses import dataclass

from killtest.harness.faults.points import DesignLike, register
from killtest.harness.faults.points.store_write import AtStoreWrite

AFTER = "a"  # what an after twin's text puts in front of its before-point's: `aw5` is after `w5`


@register
@dataclass(frozen=True)
class AfterStoreWrite(AtStoreWrite):
    """A store write's after twin: a kind of store-write point (every isinstance of AtStoreWrite holds), aimed
    alike, that kills once the write is done."""

    MODE = "after"  # every gate's start_options (AtStoreWrite's) holds the start once the write is done
    PREFIX = AFTER + AtStoreWrite.PREFIX
    FORM = "aw<store write number>[:c<store connection number> | :<file under the work dir> | :redis]"
    EXAMPLES = ("aw5",)
    ORDER = 26

    @classmethod
    def parse(cls, text: str, design: DesignLike | None = None) -> AfterStoreWrite:
        point = super().parse(text, design)  # AtStoreWrite.parse strips our whole prefix and builds `cls`
        assert isinstance(point, AfterStoreWrite)
        return point

    @property
    def spec(self) -> str:
        return AFTER + super().spec


def before_twin(point: AtStoreWrite) -> AtStoreWrite:
    """`w5` for `aw5` (aimed alike); the point itself when it is a before-point."""
    if not isinstance(point, AfterStoreWrite):
        return point
    return AtStoreWrite(point.index, plan=point.plan, resolved=point.resolved, connection=point.connection,
                        file=point.file, server=point.server)


def after_twin(point: AtStoreWrite) -> AfterStoreWrite:
    """`aw5` for `w5`, carrying the same aim (its recording's plan), so explore records once for both."""
    return AfterStoreWrite(point.index, plan=point.plan, resolved=point.resolved, connection=point.connection,
                           file=point.file, server=point.server)


def with_after_twins(points: list) -> list:
    """`points` with each store write's after twin right after it (`w5`, `aw5`), aimed alike: what explore offers."""
    return [each for point in points
            for each in (point, *([after_twin(point)] if type(point) is AtStoreWrite else []))]
