"""`s0.5`: 0.5 s after the start, the store's own server (the harness's private PostgreSQL or Redis; for a
file store, the first server its spec declares) is SIGKILLed and started again on the same data, and the
start's workers are killed with it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from killtest.harness.design.stores import kind_of
from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import DesignLike, Fired, PointKind, Target, positive_seconds, register


@register
@dataclass(frozen=True)
class ServerRestart(PointKind):
    delay_s: float

    PREFIX = "s"
    FORM = "s<seconds>"
    EXAMPLES = ("s0.5",)
    ORDER = 40

    @classmethod
    def parse(cls, text: str, design: DesignLike | None = None) -> ServerRestart:
        return cls(positive_seconds(text[len(cls.PREFIX):]))

    @property
    def spec(self) -> str:
        return f"s{self.delay_s:g}"

    @property
    def wait_s(self) -> float:
        return self.delay_s

    def validate(self, designs: Sequence[DesignLike], workers: int) -> None:
        for design in designs:
            # A file store with no server declared ([servers]): nothing to crash. A file store beside a
            # declared server (a queue in Redis): that server is the one crashed.
            if kind_of(design.store.kind).server is None and not getattr(design, "servers", ()):
                raise KilltestError(f"kill point {self.spec} restarts the store's server, but design"
                                    f" {design.name!r} keeps a {design.store.kind} store with no server and"
                                    " declares none ([servers])")

    def check_runnable(self, design: DesignLike, workers: int, can_restart_store: bool) -> None:
        if not can_restart_store:
            raise KilltestError(f"design {design.name!r} has no store server to restart: s<seconds> kill points need a"
                                " PostgreSQL or Redis store")

    def fire(self, target: Target) -> Fired:
        down_s = target.restart_store()
        return Fired("SIGKILL", target.kill(), fields={"server_restart_s": round(down_s, 3)})
