"""`w5`: SIGKILL the start on entering its 5th write-type system call to the store (exact, any language).

A write-type call is a write, pwrite, writev, fsync/fdatasync, rename, truncate or unlink
(harness/faults/store_writes.py) to a file under the design's work dir or store path. The point is
carried out by strace's fault injection, so it reaches any program and its children, and the kill
lands before the write happens. strace counts per thread and per system call, so the harness first
records the start running to the end and turns "the 5th write" into "pwrite64 number 3 of its thread"
(harness/running/write_plans.py resolves it; `InjectionPlan`); a write that another thread or process
would reach first by that count is refused with a one-line error.

For a PostgreSQL or Redis store, a write is a statement or command sent to the store's server: the
start runs under a loopback proxy of its own (harness/faults/command_gate.py), given to it as `{dsn}`,
which counts the start's statements (not its reads: harness/faults/store_commands.py says what
counts) and kills the start before the n-th reaches the server, no recording needed. `w7:c2` is the 7th
statement of the start's 2nd connection: the same statement on every start even when its connections
interleave differently (BullMQ's timers), which explore offers for such a design. A file store's point
without strace is refused in one line.

`w3:redis` is the 3rd counted write command to the private Redis the design's spec declares (`[servers]
redis`, its address `{redis_url}`), whatever its store: a crawler whose records go to a file and whose queue
lives in Redis. The start runs behind the same proxy, pointed at that server (`w3:postgres` likewise, at
`{postgres_dsn}`); a file literally named `redis` is written `./redis`, as `./c2`. Each point here has its
after twin, `aw5` (after_store_write.py): the same write, the kill once it is done.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from killtest.harness.design.model import SERVER_PLACEHOLDERS
from killtest.harness.design.stores import kind_of
from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import DesignLike, PointKind, StartOptions, register
from killtest.harness.faults.store_writes import InjectionPlan, recording_prefix

GATE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "write_gate.py")
COMMAND_GATE = os.path.join(os.path.dirname(GATE), "command_gate.py")
FILE_GATE = os.path.join(os.path.dirname(GATE), "file_gate.py")
GATE_MISSED = ".killtest-write-gate-missed"  # in the work dir: the gate's note of a kill off its aim


def require_strace(spec: str) -> None:
    """A one-line KilltestError where strace is not installed."""
    if shutil.which("strace") is None:
        raise KilltestError(f"kill point {spec} needs strace, which is not installed here (apt-get install strace)")


def server_store(design: DesignLike) -> bool:
    """A store kept by a private server (PostgreSQL, Redis): its writes are statements, counted by a proxy."""
    return kind_of(design.store.kind).server is not None


def command_gate_options(mode: str, argument: str, dsn: str) -> StartOptions:
    """The start behind its own proxy to the store's server (harness/faults/command_gate.py), in `mode`
    `kill` (before the `argument`-th statement), `after` (once the server answered it) or `record` (to the log
    `argument`)."""
    return StartOptions(command_prefix=(sys.executable, "-S", COMMAND_GATE, mode, argument, dsn, "--"))


def gate_options(plan: InjectionPlan | None, values: Mapping[str, str] | None, after: bool = False) -> StartOptions:
    """The start under the write gate (harness/faults/write_gate.py); no gate when the start never gets there.
    `after`: the gate kills once the write is done, not before it (an after twin, `aw5`: after_store_write.py)."""
    if plan is None:
        return StartOptions()  # the start makes fewer store writes: it runs to the end
    assert values is not None, "a store-write point needs the start's work dir"
    when = ("--after",) if after else ()
    if plan.any_thread:  # `w2:FILE`: the file gate counts every thread's calls naming the file (faults/file_aims.py)
        work_dir = re.escape(values["work_dir"].rstrip("/"))  # the patterns are relative to it (`into:` points)
        like = [word for pattern in plan.like for word in ("--like", f"{work_dir}/{pattern}")]
        return StartOptions(command_prefix=(sys.executable, "-S", FILE_GATE, *when, plan.syscall, str(plan.when),
                                            *plan.absolute_target(values), *like, "--"))
    aim = ("--aim", str(plan.on_target), os.path.join(values["work_dir"], GATE_MISSED),
           *plan.absolute_target(values)) if plan.target else ()
    return StartOptions(command_prefix=(sys.executable, "-S", GATE, *when, plan.syscall, str(plan.when),
                                        *plan.absolute_paths(values), *aim, "--"))


def gate_missed(values: Mapping[str, str]) -> dict[str, str]:
    """`{"aimed_elsewhere": why}` when the write gate's kill did not land on the write its point names
    (harness/faults/write_gate.py, `--aim`); the note is removed, so the next start's kill is judged afresh."""
    path = os.path.join(values["work_dir"], GATE_MISSED)
    try:
        with open(path, encoding="utf-8") as note:
            why = note.read().strip()
        os.remove(path)
    except FileNotFoundError:
        return {}
    # The gate names files by their absolute paths; the run's work dir is a temporary one, gone when a user reads
    # this: the files are named as the point names them, relative to it (`queue-41235.json`, not /tmp/killtest-…/).
    return {"aimed_elsewhere": why.replace(values["work_dir"].rstrip("/") + "/", "")}


def file_words(file: str) -> str:
    """A point's file as its text writes it: `./c2` for a file named like a connection or `./redis` like a declared
    server, which `c2` and `redis` would name."""
    return f"./{file}" if re.fullmatch(r"c\d+", file) or file in SERVER_PLACEHOLDERS else file


@register
@dataclass(frozen=True)
class AtStoreWrite(PointKind):
    index: int  # 1-based, counting the start's own store writes
    # Filled in by a recording (harness/running/write_plans.py): what strace injects. None once resolved:
    # the start makes fewer store writes, so the point is never reached.
    plan: InjectionPlan | None = field(default=None, compare=False)
    resolved: bool = field(default=False, compare=False)
    # A server's store only (`w7:c2`): the index-th statement of the start's connection number 2 (in the
    # order it connected), which stays the same statement when its connections interleave differently.
    connection: int | None = None
    # A file store only (`w2:storage/datasets/7.json`): the index-th store write naming that file (relative to the
    # work dir), whichever thread makes it: a thread pool's atomic writes (faults/file_aims.py).
    file: str | None = None
    # A server the design declares (`w3:redis`: [servers] in its spec), whatever its store: the index-th counted
    # write command the start sends it, counted by a proxy pointed at that server's placeholder ({redis_url}).
    server: str | None = None

    MODE = "kill"  # the gates' word for when the kill lands: before the write (`after` for an after twin)
    PREFIX = "w"
    FORM = "w<store write number>[:c<store connection number> | :<file under the work dir> | :redis]"
    EXAMPLES: ClassVar[tuple[str, ...]] = ("w5", "w1:storage/datasets/000000003.json")
    ORDER = 25

    @property
    def needs_own_start(self) -> bool:
        return True  # the write gate (strace, or the store-command proxy) is how its start is spawned

    @classmethod
    def parse(cls, text: str, design: DesignLike | None = None) -> AtStoreWrite:
        body, colon, after = text[len(cls.PREFIX):].partition(":")
        index = int(body)
        if index < 1:
            raise ValueError(text)
        if colon and re.fullmatch(r"c\d+", after):  # a connection; a file named like one is written ./c2
            if int(after[1:]) < 1:
                raise ValueError(text)
            return cls(index, connection=int(after[1:]))
        if not colon:
            return cls(index)
        if after in SERVER_PLACEHOLDERS:  # a declared server; a file named like one is written ./redis
            return cls(index, server=after)
        file = os.path.normpath(after)
        if not after or os.path.isabs(after) or file == "." or file.startswith("..") or "@" in after:
            raise ValueError(text)  # a file under the work dir, named relative to it
        return cls(index, file=file)

    @property
    def spec(self) -> str:
        return f"w{self.index}" + (f":c{self.connection}" if self.connection is not None else
                                   f":{file_words(self.file)}" if self.file is not None else
                                   f":{self.server}" if self.server is not None else "")

    def validate(self, designs: Sequence[DesignLike], workers: int) -> None:
        super().validate(designs, workers)
        if self.server is not None:
            undeclared = [design for design in designs if self.server not in getattr(design, "servers", ())]
            if undeclared:
                raise KilltestError(f"kill point {self.spec} names the {self.server} server a design declares, but"
                                    f" design {undeclared[0].name!r} declares none: add `[servers]"
                                    f" {self.server} = {{}}` to its spec, or name a store write, w{self.index}")
        files = [design for design in designs if not server_store(design)]
        if files and self.connection is not None:
            raise KilltestError(f"kill point {self.spec} names a connection to a store's server, but design"
                                f" {files[0].name!r} keeps a {files[0].store.kind} store: write w{self.index}")
        if files and self.server is None and self.file is not None and platform.machine() != "x86_64":
            raise KilltestError(f"kill point {self.spec} is carried out by a seccomp filter that names system calls by"
                                f" their x86_64 numbers, and this machine is {platform.machine()}: name the write by"
                                f" its place, w<n>")
        servers = [design for design in designs if server_store(design)]
        if servers and self.file is not None:
            raise KilltestError(f"kill point {self.spec} names a file, but design {servers[0].name!r} keeps its"
                                f" records in a {servers[0].store.kind} server: name a statement, w{self.index}")
        if files and self.server is None:
            require_strace(self.spec)
        if workers > 1:
            raise KilltestError(f"kill point {self.spec} counts one start's writes in order; with --workers {workers}"
                                " that order is a race: use one worker")

    def check_runnable(self, design: DesignLike, workers: int, can_restart_store: bool) -> None:
        self.validate([design], workers)
        if not self.resolved and not server_store(design) and self.server is None:
            raise KilltestError(f"kill point {self.spec} is turned into strace's count by a recording run first:"
                                " run it with killtest replay, explore or fuzz")

    def start_options(self, values: Mapping[str, str] | None = None) -> StartOptions:
        if values is not None and self.server is not None:  # a declared server: a proxy pointed at its address
            return command_gate_options(self.MODE, str(self.index), values[SERVER_PLACEHOLDERS[self.server]])
        if values is not None and values.get("dsn"):  # a server's store: its proxy counts the statements
            at = str(self.index) if self.connection is None else f"{self.connection}:{self.index}"
            return command_gate_options(self.MODE, at, values["dsn"])
        return gate_options(self.plan, values, after=self.MODE == "after")


@dataclass(frozen=True)
class RecordStart(PointKind):
    """Not a kill: the start runs to the end under strace (a file store) or its proxy (a server's store),
    which records its writes (and, under strace, its requests) to `log_path`.

    Not registered, so no schedule text names it; harness/running/write_plans.py puts it after the points
    of a schedule it resolves."""

    log_path: str
    server: str | None = None  # a declared server's commands (its proxy records them), not the store's writes

    PREFIX = "record:"
    FORM = "record"
    EXAMPLES = ()

    @property
    def spec(self) -> str:
        return "record"

    def start_options(self, values: Mapping[str, str] | None = None) -> StartOptions:
        if values is not None and self.server is not None:  # a declared server: its proxy logs the commands
            return command_gate_options("record", self.log_path, values[SERVER_PLACEHOLDERS[self.server]])
        if values is not None and values.get("dsn"):  # a server's store: its proxy logs the statements
            return command_gate_options("record", self.log_path, values["dsn"])
        return StartOptions(command_prefix=recording_prefix(self.log_path))
