"""The kill-point family: one module per kind, each registered by the prefix its text starts with.

A kill point ends one start of a run. Each kind owns, in its own module:
- its text: `parse(text, design)` reads it, `.spec` writes it back, so every schedule replays from one line;
- its validation: `.validate(designs, workers)` before anything runs, `.check_runnable(...)` in the runner;
- what the runner does with it: how the start is spawned (`.start_options(values)`, given the start's
  placeholder values: `work_dir`, `store`, ...), what is armed around
  it (`.arm(site)`: the request kind installs the site's request hook), how long the runner waits
  (`.wait_s`) and what happens when that wait runs out (`.fire(target)`: kill, redeploy, restart one
  worker, crash the store's server first), and once the whole start is dead (`.after_kill(target)`: a
  power cut, under the mount the runner keeps over the work dir when `needs_power_loss_mount`).

The runner asks the point and knows no kind by name, so a new kind (store-write points, pauses,
power loss) is one module here plus its test: define a class on `PointKind` and decorate it with
`@register`. The kinds are found by listing this package, so nothing else needs an edit.

Import rule: this package is part of harness/faults and may import killtest.harness.design, killtest.harness.check and
the floor (killtest.harness.errors, ...); never killtest.harness.running, which imports it. What a point needs from a
run comes in as the small `Target` protocol below.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from killtest.harness.errors import KilltestError


@dataclass(frozen=True)
class StartOptions:
    """How the runner spawns a start that a point will end."""

    # (absolute file, line, hit): run the start under killtest.harness.faults.tracer, which SIGKILLs it there.
    kill_at_line: tuple[str, int, int] | None = None
    # A program the start's command runs under (for example strace with a fault to inject), with the
    # command appended. Such a start is always a fresh process: a pre-forked one would escape it.
    command_prefix: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fired:
    """What a point did when its wait ran out: the runner records it as a `kill` event (unless nothing was killed)."""

    signal: str  # the first signal sent: SIGKILL, or SIGTERM for a redeploy
    returncode: int
    start_over: bool = True  # False: one worker was hit and started again; the start goes on
    fields: dict[str, Any] = field(default_factory=dict)  # extra fields of the `kill` event
    restarted_pid: int | None = None  # the new worker's pid, when one worker was started again
    killed: bool = True  # False: nothing was killed (a pause); the runner writes no `kill` event


class Target(Protocol):
    """What a firing point can reach in a run; the runner provides it (killtest.harness.running.runner)."""

    def kill(self) -> int:
        """SIGKILL every worker of the start; its exit status."""

    def redeploy(self, grace_s: float) -> int:
        """SIGTERM every worker, SIGKILL after `grace_s`; the exit status."""

    def restart_worker(self, worker: int, grace_s: float | None) -> tuple[int, int]:
        """Kill one worker (SIGTERM first when `grace_s` is given) and start it again: (status, new pid)."""

    def restart_store(self) -> float:
        """Crash and restart the store's server; the seconds it was down."""

    def pause(self, worker: int | None, seconds: float) -> float:
        """SIGSTOP every worker (or worker `worker` alone), SIGCONT them `seconds` later; the seconds stopped."""

    def lose_power(self) -> dict[str, Any]:
        """SIGKILL every worker, then cut the power of the run's power-loss mount: what no fsync made durable
        is gone (killtest.harness.faults.power_loss). Writes `power_lost`; returns what was lost."""


class Armed(Protocol):
    """What a point set up around one start (for example the site's request hook)."""

    fired_at: float | None  # time.monotonic() when an exact trigger fired, if it did

    def watch(self, start: Any) -> None:
        """The start the trigger must hit (a killtest.harness.running.processes.Start)."""

    def disarm(self) -> None:
        """Take down what `arm` set up."""


class NotArmed:
    """Nothing armed: the point acts from the runner's own thread, or from inside the scraper."""

    fired_at: float | None = None

    def watch(self, start: Any) -> None:
        pass

    def disarm(self) -> None:
        pass


class DesignLike(Protocol):
    """The parts of a killtest.harness.design.model.Design that points read."""

    @property
    def name(self) -> str: ...

    @property
    def module(self) -> str | None: ...

    @property
    def store(self) -> Any: ...

    @property
    def source_file(self) -> str: ...


@runtime_checkable
class KillPoint(Protocol):
    """One kill point of a schedule: what every kind provides (see `PointKind` for the defaults)."""

    @property
    def worker(self) -> int | None:
        """1-based: the point hits this worker alone; None: every worker of the start."""

    @property
    def spec(self) -> str: ...

    @property
    def wait_s(self) -> float | None: ...

    def validate(self, designs: Sequence[DesignLike], workers: int) -> None: ...

    def check_runnable(self, design: DesignLike, workers: int, can_restart_store: bool) -> None: ...

    def start_options(self, values: Mapping[str, str] | None = None) -> StartOptions: ...

    @property
    def starts_over(self) -> bool: ...

    @property
    def needs_own_start(self) -> bool: ...

    def arm(self, site: Any) -> Armed: ...

    def fire(self, target: Target) -> Fired: ...

    def after_kill(self, target: Target) -> None: ...

    # The whole run needs the power-loss file system mounted over its work dir (killtest.harness.faults.power_loss).
    needs_power_loss_mount: ClassVar[bool]


class PointKind:
    """The defaults of a kind: an exact point that fires by itself, inside the start or at the site.

    A kind sets `PREFIX` (what its text starts with), `FORM` and `EXAMPLES` (for the one-line error
    that lists every form), `ORDER` (its place in that list), and overrides what it does differently.
    """

    PREFIX: ClassVar[str]
    FORM: ClassVar[str]
    EXAMPLES: ClassVar[tuple[str, ...]]
    ORDER: ClassVar[int] = 100
    TAKES_WORKER: ClassVar[bool] = False  # its text may end with @<worker>
    # True: the runner mounts the power-loss file system over the run's work dir for the whole run and
    # leaves it before the store is read (a power-cut point: killtest.harness.faults.points.power_cut).
    needs_power_loss_mount: ClassVar[bool] = False
    worker: int | None = None

    @classmethod
    def parse(cls, text: str, design: DesignLike | None = None) -> PointKind:
        """The point its text names; ValueError for text of this kind that is malformed."""
        raise NotImplementedError

    @property
    def spec(self) -> str:
        raise NotImplementedError

    @property
    def wait_s(self) -> float | None:
        """How long the runner waits before `fire`; None: until the start ends (the point fires inside it)."""
        return None

    def validate(self, designs: Sequence[DesignLike], workers: int) -> None:
        """A one-line KilltestError when the point cannot apply to these designs with `workers` workers."""
        if self.worker is not None and self.worker > workers:
            raise KilltestError(f"kill point {self.spec} names worker {self.worker}, but each start has"
                                f" {workers}; give --workers {self.worker} or more")

    def check_runnable(self, design: DesignLike, workers: int, can_restart_store: bool) -> None:
        """The runner's own check, against what this run of `design` was given."""
        if self.worker is not None and self.worker > workers:
            raise KilltestError(f"kill point {self.spec} names worker {self.worker}, but each start"
                                f" has {workers}; give --workers {self.worker} or more")

    @property
    def starts_over(self) -> bool:
        """Whether the whole start ends when the point fires, so the next point meets a new start; a point
        that hits one worker (`@K`, which restarts it alone) or pauses does not."""
        return self.worker is None

    @property
    def needs_own_start(self) -> bool:
        """Whether the point is carried out by how its start is spawned (a line tracer, a write gate), so
        it must meet a start of its own: first in the schedule, or after a point that `starts_over`."""
        return False

    def start_options(self, values: Mapping[str, str] | None = None) -> StartOptions:
        """How the start is spawned; `values` are the start's placeholders (Design.values):
        a store-write point builds its strace `-P` paths from `work_dir` and `store`."""
        return StartOptions()

    def arm(self, site: Any) -> Armed:
        return NotArmed()

    def fire(self, target: Target) -> Fired:
        raise NotImplementedError(f"kill point {self.spec} does not wait for a time")

    def after_kill(self, target: Target) -> None:
        """Called once the point killed the whole start (fired, or exact inside it), before the next start:
        a power cut drops here what was not durable. Nothing by default."""


_KINDS: dict[str, type[PointKind]] = {}
_LOADED = False


def register(kind: type[PointKind]) -> type[PointKind]:
    """Class decorator: make `kind` known by its prefix."""
    if kind.PREFIX in _KINDS and _KINDS[kind.PREFIX] is not kind:
        raise RuntimeError(f"two kill-point kinds claim the prefix {kind.PREFIX!r}")
    _KINDS[kind.PREFIX] = kind
    return kind


def kinds() -> list[type[PointKind]]:
    """Every registered kind, in the order the one-line error lists them."""
    global _LOADED
    if not _LOADED:
        # Importing each module of this package registers its kind: a new kind is a new file.
        for module in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{module.name}")
        _LOADED = True
    return sorted(_KINDS.values(), key=lambda k: (k.ORDER, k.PREFIX))


def _forms_message(text: str) -> str:
    every = kinds()
    forms = [k.FORM for k in every]
    examples = [e for k in every for e in k.EXAMPLES]
    with_worker = [k.PREFIX for k in every if k.TAKES_WORKER]
    return (f"bad kill point {text!r}: write {_joined(forms)}, for example {_joined(examples)};"
            f" {_joined(with_worker)} points may end with @<worker>")


def _joined(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def parse_point(text: str, design: DesignLike | None = None) -> KillPoint:
    """The kill point `text` names; a one-line KilltestError listing every form when it names none.

    `design`, when given, lets a line point leave out its file: `l:complete+3:2` is in the design's module.
    """
    text = text.strip()
    for kind in sorted(kinds(), key=lambda k: -len(k.PREFIX)):  # the longest prefix first: `l:` before `l`
        if text.startswith(kind.PREFIX):
            try:
                return kind.parse(text, design)
            except ValueError:
                break
    raise KilltestError(_forms_message(text))


def positive_seconds(text: str) -> float:
    """A delay of more than zero seconds, or ValueError."""
    value = float(text)
    if not value > 0:
        raise ValueError(text)
    return value


def split_worker(text: str) -> tuple[str, int | None]:
    """`t0.3@2` -> (`t0.3`, 2); ValueError for a worker below 1."""
    body, at, worker_text = text.partition("@")
    if not at:
        return body, None
    worker = int(worker_text)
    if worker < 1:
        raise ValueError(text)
    return body, worker


__all__ = ["Armed", "DesignLike", "Fired", "KillPoint", "NotArmed", "PointKind", "StartOptions", "Target", "kinds",
           "parse_point", "positive_seconds", "register", "split_worker"]
