"""The scraper designs killtest knows: how to start each and where it keeps its records."""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass

from harness.errors import KilltestError

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Design:
    """A scraper program and the SQLite queries that read back what it stored."""

    name: str
    module: str
    # One row per stored record: (natural key, value[, time.time() of the write]); checked against the catalog.
    records_sql: str
    # Whether the design promises one correct row per product whatever the kills; the naive control does not.
    claims_idempotence: bool
    # Paths claimed but not committed, read after each kill; None for a design without leases.
    held_leases_sql: str | None = None
    takes_lease: bool = False
    # Functions of the design's module where a crash matters most; `killtest explore` kills at each line.
    commit_path: tuple[str, ...] = ()

    def arguments(self, base_url: str, db_path: str, lease_s: float) -> list[str]:
        """The design's own command-line arguments."""
        argv = ["--base", base_url, "--db", db_path]
        if self.takes_lease:
            argv += ["--lease", str(lease_s)]
        return argv

    def command(self, base_url: str, db_path: str, lease_s: float, traced: bool = False) -> list[str]:
        """The start's argv; `traced` runs it under harness.tracepoint, which kills it at a line."""
        runner = ["-m", "harness.tracepoint", self.module] if traced else ["-m", self.module]
        return [sys.executable, *runner, *self.arguments(base_url, db_path, lease_s)]

    def environment(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [PROJECT_ROOT, env.get("PYTHONPATH")]))
        env["PYTHONUNBUFFERED"] = "1"
        env.update(extra)
        return env

    @property
    def source_file(self) -> str:
        """The design module's file, found without importing it."""
        spec = importlib.util.find_spec(self.module)
        if spec is None or spec.origin is None:
            raise KilltestError(f"design {self.name!r}: cannot find the module {self.module!r}")
        return spec.origin


BUILT_IN_DESIGNS = {
    "naive": Design(
        name="naive",
        module="scrapers.naive",
        records_sql="SELECT sku, price, scraped_at FROM products",
        claims_idempotence=False,
        commit_path=("crawl",),
    ),
    "idempotent": Design(
        name="idempotent",
        module="scrapers.idempotent",
        records_sql="SELECT json_extract(data, '$.sku'), json_extract(data, '$.price'), first_seen FROM records",
        claims_idempotence=True,
        held_leases_sql="SELECT path FROM frontier WHERE status = 'leased'",
        takes_lease=True,
        commit_path=("claim", "complete"),
    ),
    # A known bug, kept so that every exact-crash tool can prove it bites: see scrapers/zoo/.
    "zoo-done-before-record": Design(
        name="zoo-done-before-record",
        module="scrapers.zoo.done_before_record",
        records_sql="SELECT json_extract(data, '$.sku'), json_extract(data, '$.price'), first_seen FROM records",
        claims_idempotence=True,
        held_leases_sql="SELECT path FROM frontier WHERE status = 'leased'",
        takes_lease=True,
        commit_path=("complete",),
    ),
}


def design_named(name: str) -> Design:
    try:
        return BUILT_IN_DESIGNS[name]
    except KeyError:
        known = ", ".join(sorted(BUILT_IN_DESIGNS))
        raise KilltestError(f"unknown design {name!r}; known designs: {known}") from None
