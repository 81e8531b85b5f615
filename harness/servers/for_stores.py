"""The servers the designs keep state in, started once for a campaign, with a fresh database for every run.

Which server a store needs is its kind's answer (`kind_of(kind).server`, harness/design/stores/); the
servers a design keeps other state in (a queue in Redis while its records go to a file) are the ones its
spec declares (`Design.servers`, `[servers]`). This module only knows the servers by their names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from killtest.harness.design.model import Design
from killtest.harness.design.stores import kind_of
from killtest.harness.errors import KilltestError, require_module
from killtest.harness.servers.common import PrivateServer
from killtest.harness.servers.private_postgres import PrivatePostgres
from killtest.harness.servers.private_redis import PrivateRedis

# Every private server, by the name a store kind gives as its `server`.
SERVERS: dict[str, type[PrivateServer]] = {server.name: server for server in (PrivatePostgres, PrivateRedis)}


def server_for(design: Design) -> str | None:
    """The name of the private server `design`'s store lives in; None for a store kept in a file."""
    return kind_of(design.store.kind).server


def servers_of(design: Design) -> tuple[str, ...]:
    """Every private server `design` needs: its store's, then the ones its spec declares."""
    store = server_for(design)
    return (*([store] if store is not None else []), *design.servers)


class StoreServers:
    """`with StoreServers(designs) as servers: dsn, urls = servers.dsn_for(design), servers.urls_for(design)`;
    nothing starts if no design needs a server."""

    def __init__(self, designs: Iterable[Design], command_prefix: tuple[str, ...] = ()) -> None:
        self._prefix = command_prefix  # every server runs under it: the disk model's strace, or nothing
        wanted = {name for design in designs for name in servers_of(design)}
        unknown = sorted(wanted - set(SERVERS))
        if unknown:
            raise KilltestError(f"no private server is named {unknown[0]!r}; harness/servers has: {', '.join(SERVERS)}")
        self._wanted = {name: server for name, server in SERVERS.items() if name in wanted}
        for name, server in self._wanted.items():
            for module, extra in server.python_packages:
                require_module(module, extra, f"a design that keeps state in {name}")
        self._running: dict[str, PrivateServer] = {}

    def __enter__(self) -> StoreServers:
        try:
            for name, server in self._wanted.items():
                instance = server()
                instance.command_prefix = self._prefix
                self._running[name] = instance.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _server_of(self, design: Design) -> PrivateServer | None:
        name = server_for(design)
        return self._running.get(name) if name is not None else None

    def dsn_for(self, design: Design) -> str:
        """A new empty database for one run of `design`, or "" for a store that needs no server."""
        server = self._server_of(design)
        return server.fresh_database() if server is not None else ""

    def urls_for(self, design: Design) -> tuple[tuple[str, str], ...]:
        """(server name, URL) of each server `design` declares, fresh for one run: Launch.servers."""
        return tuple((name, self._running[name].fresh_database()) for name in design.servers)

    def restarter_for(self, design: Design) -> Callable[[], float] | None:
        """A function that crashes and restarts `design`'s store server (a file store's: the first server its
        spec declares, where its queue lives), or None for a design that keeps nothing in a server."""
        names = servers_of(design)
        return self._running[names[0]].crash_and_restart if names else None

    def __exit__(self, *exc: object) -> None:
        for server in self._running.values():
            server.stop()
        self._running = {}
