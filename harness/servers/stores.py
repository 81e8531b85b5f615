"""The servers the designs' stores need, started once for a campaign, with a fresh database for every run."""

from __future__ import annotations

from harness.designs import Design
from harness.servers.postgres import PrivatePostgres


class StoreServers:
    """`with StoreServers(designs) as servers: dsn = servers.dsn_for(design)`; nothing starts if no store needs it."""

    def __init__(self, designs) -> None:
        self._needs_postgres = any(d.store.kind == "postgres" for d in designs)
        self._postgres: PrivatePostgres | None = None

    def __enter__(self) -> "StoreServers":
        if self._needs_postgres:
            self._postgres = PrivatePostgres().start()
        return self

    def dsn_for(self, design: Design) -> str:
        """A new empty database for one run of `design`, or "" for a store that needs no server."""
        if design.store.kind != "postgres":
            return ""
        return self._postgres.fresh_database()

    def __exit__(self, *exc) -> None:
        if self._postgres is not None:
            self._postgres.stop()
