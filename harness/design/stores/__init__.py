"""Read back what a design stored, as its spec says, without changing it: the family of store kinds.

A store is read the same way whatever its kind: rows with a key column, the columns the spec maps
to the site's fields, and, when the spec names them, the design's own write and change times.

Each kind is one module of this folder that exposes `KIND`, an object of the `StoreKind` protocol:
its name (the spec's `store.kind`), what its spec must and may hold (`spec_rules`), which private
server its location comes from (`server`: None for a file or folder under the run's work_dir), and
how its records, held leases and counter are read. The registry finds the modules itself, so
adding a kind is one module, its test and its line in the reference docs; nothing here names one.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import pkgutil
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from killtest.harness.design.model import Design, Launch, StoreSpec
from killtest.harness.errors import KilltestError


@dataclass(frozen=True)
class StoredRecord:
    """One row of the store: the natural key, the fields by site name, and the design's own times."""

    key: str | None  # None: the row could not be read (a torn line, a key that is missing)
    fields: dict[str, str] = field(default_factory=dict)
    written_at: float | None = None  # time.time() of the first write, as the design stamped it
    changed_at: float | None = None  # time.time() of the last change the design claims
    unreadable: str = ""  # why the row could not be read


@dataclass(frozen=True)
class KeyRule:
    """What a kind says about one `[store]` key: the spec must give it (`needed`) or must not."""

    needed: bool
    message: str  # the one-line error, after `FILE:LINE: `


def needs(message: str) -> KeyRule:
    """The spec must give this key; a spec without it is refused with `message`, at the [store] line."""
    return KeyRule(True, message)


def refuses(message: str) -> KeyRule:
    """The spec must not give this key; a spec with it is refused with `message`, at the key's line."""
    return KeyRule(False, message)


class StoreKind(Protocol):
    """One kind of store: how its spec is checked, where it lives, how it is read."""

    name: str  # the spec's store.kind
    description: str  # one line for the reference docs: where the store lives, what records and leases are
    # The private server (harness/servers, by its name) whose fresh database is the store's location,
    # given to the design as {dsn}; None: the store is the file or folder of `store.path`.
    server: str | None
    # Keys of [store] the kind needs or refuses, checked in this order; a key not named is optional.
    spec_rules: Mapping[str, KeyRule]

    def location(self, design: Design, launch: Launch) -> str:
        """Where one run's store is: a path under work_dir, or the DSN of the server's database."""
        ...

    def records(self, spec: StoreSpec, location: str) -> list[StoredRecord]:
        """Every row, duplicates included."""
        ...

    def leases(self, spec: StoreSpec, location: str) -> list[str]:
        """The paths `store.leases` names as claimed but not committed (called only when it is set)."""
        ...

    def counter(self, spec: StoreSpec, location: str) -> float | None:
        """The number `store.counter` names (called only when it is set); None with no row yet."""
        ...


class StoreBase:
    """What kinds share by default: the store is the file or folder of `store.path`, under the run's
    work_dir, and it holds no leases or counter unless the kind reads them."""

    server: str | None = None

    def location(self, design: Design, launch: Launch) -> str:
        return design.values(launch)["store"]

    def leases(self, spec: StoreSpec, location: str) -> list[str]:
        return []  # a kind that reads leases overrides this; one that cannot refuses store.leases

    def counter(self, spec: StoreSpec, location: str) -> float | None:
        return None  # likewise for store.counter


class ServerStore(StoreBase):
    """A kind kept in a private server's database: the location is the DSN the run was given."""

    def location(self, design: Design, launch: Launch) -> str:
        return launch.dsn


class QueryStore(StoreBase):
    """A kind read by SQL queries: records, leases and the counter are each a query's rows."""

    def query(self, spec: StoreSpec, location: str, sql: str, spec_key: str) -> tuple[list[str], list[tuple]]:
        """(column names, rows) of `sql`; nothing when the store or its schema does not exist yet."""
        raise NotImplementedError

    def records(self, spec: StoreSpec, location: str) -> list[StoredRecord]:
        columns, rows = self.query(spec, location, spec.records, "records")
        return [record_from_row(spec, dict(zip(columns, row, strict=True))) for row in rows]

    def leases(self, spec: StoreSpec, location: str) -> list[str]:
        _, rows = self.query(spec, location, spec.leases or "", "leases")
        return [str(row[0]) for row in rows]

    def counter(self, spec: StoreSpec, location: str) -> float | None:
        _, rows = self.query(spec, location, spec.counter or "", "counter")
        return float(rows[0][0]) if rows and rows[0] and rows[0][0] is not None else None


# What the file kinds that hold no query say when a spec gives them one.
LEASES_NEED_A_QUERY = "store.leases is a query, so it needs a sqlite or postgres store"
COUNTER_NEEDS_A_QUERY = "store.counter is a query, so it needs a sqlite or postgres store"


@functools.cache
def _registry() -> dict[str, StoreKind]:
    """Every kind module of this folder, by kind name; read once, on the first lookup."""
    kinds: dict[str, StoreKind] = {}
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        kind = getattr(importlib.import_module(f"{__name__}.{module_info.name}"), "KIND", None)
        if kind is None:
            continue
        if kind.name in kinds:
            raise KilltestError(f"two store kinds are named {kind.name!r} (harness/design/stores/)")
        kinds[kind.name] = kind
    return kinds


def kind_of(name: str) -> StoreKind:
    """The store kind a spec's `store.kind` names; a KilltestError listing the kinds for any other."""
    try:
        return _registry()[name]
    except KeyError:
        raise KilltestError(f"store.kind {name!r} is not one of {', '.join(store_kinds())}") from None


def store_kinds() -> tuple[str, ...]:
    """The names of every registered store kind."""
    return tuple(_registry())


def store_location(design: Design, launch: Launch) -> str:
    """The file, folder or DSN the harness reads one run's records from."""
    return kind_of(design.store.kind).location(design, launch)


def stored_records(design: Design, location: str) -> list[StoredRecord]:
    """Every row of the store, duplicates included: the checker counts them."""
    return kind_of(design.store.kind).records(design.store, location)


def stored_counter(design: Design, location: str) -> float | None:
    """The number the design's `store.counter` query returns (None without one, or with no row yet)."""
    if design.store.counter is None:
        return None
    return kind_of(design.store.kind).counter(design.store, location)


def held_leases(design: Design, location: str) -> list[str]:
    """Paths the design had claimed but not committed when it was last stopped."""
    if design.store.leases is None:
        return []
    return kind_of(design.store.kind).leases(design.store, location)


def stored_files(directory: str | None) -> list[tuple[str, str]]:
    """(file name, sha256 of its bytes) for every file in the design's download directory."""
    if directory is None or not os.path.isdir(directory):
        return []
    files = []
    for name in sorted(os.listdir(directory)):
        full = os.path.join(directory, name)
        if os.path.isfile(full):
            with open(full, "rb") as content:
                files.append((name, hashlib.sha256(content.read()).hexdigest()))
    return files


def record_from_row(spec: StoreSpec, row: Mapping[str, Any]) -> StoredRecord:
    """A row (column -> value) as a StoredRecord; a column the spec names and the row lacks is the spec's mistake."""
    wanted = [("key", spec.key)] + [("fields", column) for _, column in spec.fields]
    wanted += [(name, column) for name, column in (("written_at", spec.written_at), ("changed_at", spec.changed_at))
               if column]
    for spec_key, column in wanted:
        if column not in row:
            raise KilltestError(f"{spec.where(spec_key)}: store.{spec_key} names {column!r}, but the records"
                                f" hold only: {', '.join(map(str, row)) or '(nothing)'}")
    if row[spec.key] is None:
        return StoredRecord(None, unreadable=f"a row without a {spec.key}")
    return StoredRecord(key=str(row[spec.key]),
                        fields={site: _text(row[column]) for site, column in spec.fields},
                        written_at=_seconds(row.get(spec.written_at)) if spec.written_at else None,
                        changed_at=_seconds(row.get(spec.changed_at)) if spec.changed_at else None)


def record_from_json(spec: StoreSpec, where: str, text: str | bytes) -> StoredRecord:
    """One JSON object as a record; text that is not one is an unreadable row, named by `where`."""
    try:
        row = json.loads(text)
    except ValueError:
        # A line torn by SIGKILL, or two writes run together: a broken record, not a skipped one.
        shown = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        # Which key it was, when its text still says: a torn row is a finding about that key.
        key = re.search(rf'"{re.escape(spec.key)}"\s*:\s*("(?:[^"\\]|\\.)*"|[\w.-]+)', shown)
        about = f" (its {spec.key} reads {key[1].strip(chr(34))})" if key else ""
        return StoredRecord(None, unreadable=f"{where} is not JSON{about}: {shown.strip()[:60] or '(empty)'}")
    if not isinstance(row, dict):
        return StoredRecord(None, unreadable=f"{where} is not a JSON object")
    if spec.key not in row:
        return StoredRecord(None, unreadable=f"{where} has no {spec.key!r}")
    return record_from_row(spec, row)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _seconds(value: Any) -> float | None:
    if value is None:
        return None
    if hasattr(value, "timestamp"):  # a PostgreSQL timestamptz comes back as a datetime
        return value.timestamp()
    return float(value)
