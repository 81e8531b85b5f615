"""The servers the designs' stores need, started once for a campaign, with a fresh database for every run."""

from __future__ import annotations

from harness.design.model import Design
from harness.servers.private_postgres import PrivatePostgres
from harness.servers.private_redis import PrivateRedis


class StoreServers:
    """`with StoreServers(designs) as servers: dsn = servers.dsn_for(design)`; nothing starts if no store needs it."""

    def __init__(self, designs) -> None:
        kinds = {d.store.kind for d in designs}
        self._wanted = {"postgres": PrivatePostgres, "redis": PrivateRedis}
        self._wanted = {kind: server for kind, server in self._wanted.items() if kind in kinds}
        self._running: dict = {}

    def __enter__(self) -> "StoreServers":
        try:
            for kind, server in self._wanted.items():
                self._running[kind] = server().start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def dsn_for(self, design: Design) -> str:
        """A new empty database for one run of `design`, or "" for a store that needs no server."""
        server = self._running.get(design.store.kind)
        return server.fresh_database() if server is not None else ""

    def restarter_for(self, design: Design):
        """A function that crashes and restarts `design`'s store server, or None for a store without one."""
        server = self._running.get(design.store.kind)
        return server.crash_and_restart if server is not None else None

    def __exit__(self, *exc) -> None:
        for server in self._running.values():
            server.stop()
        self._running = {}
