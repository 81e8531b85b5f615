"""A scraper design as killtest sees it: how to start it, and where and how it keeps its records.

Designs are described by TOML specs (harness/design/specfile.py); the built-in ones are specs too
(scrapers/*.toml). A spec's strings may hold placeholders that each start fills in:

| placeholder | what it becomes |
| --- | --- |
| `{base_url}` | the fixture site, for example http://127.0.0.1:40123 |
| `{work_dir}` | a fresh directory for this run, removed afterwards |
| `{store}` | the store's path (`[store] path`, itself usually under `{work_dir}`) |
| `{lease_s}` | the lease length in seconds the run was given |
| `{crawl}` | which crawl of the store this start belongs to: 1, or 2+ for a re-crawl |
| `{dsn}` | the URL of a private, empty database: PostgreSQL (postgresql://...) or Redis (redis://...) stores |
| `{redis_url}` | a private Redis of the run's own, flushed (redis://...): a design that declares `[servers] redis` |
| `{postgres_dsn}` | a fresh database on a private PostgreSQL: a design that declares `[servers] postgres` |
| `{python}` | the interpreter killtest runs on; for a spec that names `packages`, their env's |
| `{spec_dir}` | the directory that holds the spec file |
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from killtest.harness.errors import KilltestError
from killtest.harness.promises import IDEMPOTENCE, Promise
from killtest.harness.tool_envs import ensure_env

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The private servers a design may declare (`[servers]`, whatever its store), each with the placeholder that
# gives a run its address; harness/servers has a server of each name (tests/test_servers_declared.py holds it).
SERVER_PLACEHOLDERS = {"redis": "redis_url", "postgres": "postgres_dsn"}
PLACEHOLDERS = ("base_url", "work_dir", "store", "lease_s", "crawl", "dsn", *SERVER_PLACEHOLDERS.values(), "python",
                "spec_dir")


@dataclass(frozen=True)
class StoreSpec:
    """Where a design keeps its records and how to read them back as (key, fields, stamps)."""

    kind: str  # a store kind of harness/design/stores/: sqlite, jsonl, json_files, postgres, redis, ...
    path: str = ""  # template; the SQLite file, the JSON-lines file, or the directory of JSON files
    records: str = ""  # the query (sqlite, postgres), or the Redis hash of JSON records, with key and fields
    key: str = "sku"  # the column or JSON field holding the product's natural key (its SKU)
    fields: tuple[tuple[str, str], ...] = (("price", "price"),)  # (site field, store column)
    written_at: str | None = None  # column with the design's time.time() of the first write
    changed_at: str | None = None  # column with the time.time() of the last change it claims
    leases: str | None = None  # query (or Redis list or set) of the paths claimed but not committed
    counter: str | None = None  # query of one number the design keeps: how many products it holds
    files: str | None = None  # template of the directory the design writes downloaded files to
    spec_places: tuple[tuple[str, str], ...] = ()  # (store key, `FILE:LINE` where the spec sets it)

    def where(self, key: str) -> str:
        """`FILE:LINE` of a store key in the spec, so an error names the line to fix."""
        places = dict(self.spec_places)
        return places.get(key) or places.get("kind") or "the design's spec"


@dataclass(frozen=True)
class Launch:
    """What one start of one run fills the placeholders with."""

    base_url: str
    work_dir: str
    lease_s: float
    crawl: int = 1
    dsn: str = ""
    # (server name, its URL for this run) for each server the design declares (Design.servers), in its order.
    servers: tuple[tuple[str, str], ...] = ()
    # Gives the next start a door of its own at the run's one site address, (door, base_url), so the site
    # credits a request to the start that sent it (killtest.fixture_site.doors); None: every start uses base_url.
    # It is given how to list the start's worker pids (None for one worker), to credit each request to its worker.
    open_door: Callable[[Callable[[], list[int]] | None], tuple[int, str]] | None = field(default=None, compare=False)
    # The run's own temporary directory, the starts' TMPDIR (removed with the run); empty: the machine's.
    temp_dir: str = field(default="", compare=False)


@dataclass(frozen=True)
class Design:
    """A scraper program under test and the store it writes."""

    name: str
    store: StoreSpec
    # The old switch, kept for callers and saved specs: True holds the design to the idempotence
    # promises (killtest.harness.promises.IDEMPOTENCE), False waives them. It always agrees with does_not_promise.
    claims_idempotence: bool = True
    # The control (the naive design): it must show duplicates when kills land, or the kills did not bite;
    # designs that claim idempotence must beat its wall time (--check-faster).
    control: bool = False
    # A Python design names its module: it runs as `python -m MODULE ARGS`, its lines can be traced
    # for exact crash points, and its starts can be pre-forked. Any other program gives `command`.
    module: str | None = None
    args: tuple[str, ...] = ()
    command_template: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    # Functions of the design's module where a crash matters most; `killtest explore` kills at each line.
    commit_path: tuple[str, ...] = ()
    # Side effects beyond the store: downloaded files, webhooks, a counter (harness/check/side_effects.py).
    side_effects: bool = False
    spec_file: str = ""
    # The promises the design's spec waives by name; every other one is held (killtest.harness.promises).
    does_not_promise: frozenset[Promise] = frozenset()
    # Python packages at exact pins the command runs with (the peer designs' Scrapy, Crawlee): an env of
    # their own, built on first use (killtest.harness.tool_envs, kind `designs`), whose interpreter is {python}.
    packages: tuple[str, ...] = ()
    # The private servers the design keeps state in besides its store ([servers] in its spec: a queue in Redis
    # while its records go to a file), by name (SERVER_PLACEHOLDERS); each run gets each one fresh.
    servers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # claims_idempotence given True (as explore's strict copy does) holds the idempotence promises;
        # given False by an old caller without does_not_promise, it waives them, as it always meant.
        waived = frozenset(self.does_not_promise)
        if self.claims_idempotence:
            waived -= IDEMPOTENCE
        elif not waived & IDEMPOTENCE:
            waived |= IDEMPOTENCE
        object.__setattr__(self, "does_not_promise", waived)
        object.__setattr__(self, "claims_idempotence", not waived & IDEMPOTENCE)

    def strict(self) -> Design:
        """This design held to every idempotence promise whatever its spec waives: how explore and fuzz
        judge it, and `replay --strict` after them."""
        return replace(self, claims_idempotence=True)

    @property
    def promises(self) -> list[Promise]:
        """Every promise the design is held to, in the enum's order."""
        return [p for p in Promise if p not in self.does_not_promise]

    @property
    def spec_dir(self) -> str:
        return os.path.dirname(self.spec_file) if self.spec_file else PROJECT_ROOT

    @property
    def takes_lease(self) -> bool:
        return self._uses("lease_s")

    @property
    def can_recrawl(self) -> bool:
        """A design that is told which crawl it runs can be started again on the same store."""
        return self._uses("crawl")

    @property
    def reports_leases(self) -> bool:
        return self.store.leases is not None

    def _uses(self, placeholder: str) -> bool:
        return any("{" + placeholder + "}" in part for part in (*self.args, *self.command_template))

    @property
    def python(self) -> str:
        """What {python} names: killtest's interpreter, or the env of the spec's `packages` (built and said on
        first use; design_named builds it before a run, so here it is a folder check)."""
        if not self.packages:
            return sys.executable
        return ensure_env("python", self.packages, kind="designs",
                          say=lambda message: print(f"killtest: {message}", file=sys.stderr, flush=True)).python

    def values(self, launch: Launch) -> dict[str, str]:
        values = {"base_url": launch.base_url, "work_dir": launch.work_dir, "lease_s": f"{launch.lease_s:g}",
                  "crawl": str(launch.crawl), "dsn": launch.dsn, "python": self.python,
                  "spec_dir": self.spec_dir}
        values.update((SERVER_PLACEHOLDERS[name], url) for name, url in self.server_urls(launch).items())
        values["store"] = self.store.path.format_map(values) if self.store.path else ""
        return values

    def server_urls(self, launch: Launch) -> dict[str, str]:
        """Each declared server's address for this start, by server name ({redis_url}, {postgres_dsn}).

        A run's launch carries every one (the orchestrator starts them); a launch made only to read a path
        (no run) carries none, and its values are "" then."""
        given = dict(launch.servers)
        return {name: given.get(name, "") for name in self.servers}

    def store_location(self, launch: Launch) -> str:
        """The file, folder or DSN the harness reads the records from; the store kind says which."""
        # Imported here: the store kinds read Designs, so they import this module first.
        from killtest.harness.design.stores import store_location

        return store_location(self, launch)

    def files_location(self, launch: Launch) -> str | None:
        """The directory of the design's downloaded files, when its spec names one."""
        return self.store.files.format_map(self.values(launch)) if self.store.files else None

    def arguments(self, launch: Launch) -> list[str]:
        """A Python design's own command-line arguments (what follows `python -m MODULE`)."""
        values = self.values(launch)
        return [part.format_map(values) for part in self.args]

    def command(self, launch: Launch, traced: bool = False) -> list[str]:
        """The start's argv; `traced` runs a Python design under faults/tracer.py, which kills it at a line."""
        if self.module is None:
            if traced:
                raise KilltestError(f"design {self.name!r} is not a Python module, so its lines cannot be traced;"
                                    " use request (r5) or timed (t0.4) kill points")
            values = self.values(launch)
            return [part.format_map(values) for part in self.command_template]
        runner = ["-m", "killtest.harness.faults.tracer", self.module] if traced else ["-m", self.module]
        return [sys.executable, *runner, *self.arguments(launch)]

    def environment(self, launch: Launch | None = None, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        if self.module is not None:
            # A module design runs on killtest's interpreter (where killtest itself is importable) and is
            # found from the user's project: the spec's directory, then the directory killtest runs in.
            # A command design keeps the environment of its own interpreter: killtest adds nothing to it.
            env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(filter(None, [*self.import_path,
                                                                             env.get("PYTHONPATH")])))
        env["PYTHONUNBUFFERED"] = "1"
        if launch is not None:
            values = self.values(launch)
            env.update({name: value.format_map(values) for name, value in self.env})
        env.update(extra)
        return env

    @property
    def import_path(self) -> list[str]:
        """Where a module design is looked for, besides killtest's own packages: the spec's directory and
        the directory killtest was started in (the user's project), as `python -m` would."""
        return list(dict.fromkeys([self.spec_dir, os.getcwd()]))

    @property
    def source_file(self) -> str:
        """The design module's file, found without running it (a package's __init__ may be imported)."""
        added = [path for path in self.import_path if path not in sys.path]
        sys.path[:0] = added
        try:
            spec = importlib.util.find_spec(self.module) if self.module else None
        except ImportError:
            spec = None
        finally:
            for path in added:
                sys.path.remove(path)
        if spec is None or spec.origin is None:
            raise KilltestError(f"design {self.name!r}: cannot find the Python module {self.module!r}")
        return spec.origin
