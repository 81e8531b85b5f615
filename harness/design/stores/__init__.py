"""Read back what a design stored, as its spec says, without changing it.

A store is read the same way whatever its kind: rows with a key column, the columns the spec maps
to the site's fields, and, when the spec names them, the design's own write and change times.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass, field

from harness.design.model import Design, StoreSpec
from harness.errors import KilltestError


@dataclass(frozen=True)
class StoredRecord:
    """One row of the store: the natural key, the fields by site name, and the design's own times."""

    key: str | None  # None: the row could not be read (a torn line, a key that is missing)
    fields: dict[str, str] = field(default_factory=dict)
    written_at: float | None = None  # time.time() of the first write, as the design stamped it
    changed_at: float | None = None  # time.time() of the last change the design claims
    unreadable: str = ""  # why the row could not be read


def stored_records(design: Design, location: str) -> list[StoredRecord]:
    """Every row of the store, duplicates included: the checker counts them."""
    spec = design.store
    if spec.kind == "jsonl":
        return _jsonl_records(spec, location)
    if spec.kind == "json_files":
        return _json_file_records(spec, location)
    if spec.kind == "redis":
        return _redis_records(spec, location)
    columns, rows = _query(spec, location, spec.records, "records")
    return [_record(spec, dict(zip(columns, row))) for row in rows]


def stored_counter(design: Design, location: str) -> float | None:
    """The number the design's `store.counter` query returns (None without one, or with no row yet)."""
    if design.store.counter is None:
        return None
    _, rows = _query(design.store, location, design.store.counter, "counter")
    return float(rows[0][0]) if rows and rows[0] and rows[0][0] is not None else None


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


def held_leases(design: Design, location: str) -> list[str]:
    """Paths the design had claimed but not committed when it was last stopped."""
    if design.store.leases is None:
        return []
    if design.store.kind == "redis":
        return _redis_members(design.store, location)
    _, rows = _query(design.store, location, design.store.leases, "leases")
    return [str(row[0]) for row in rows]


def _query(spec: StoreSpec, location: str, sql: str, spec_key: str) -> tuple[list[str], list[tuple]]:
    if spec.kind == "postgres":
        return _postgres_query(spec, location, sql, spec_key)
    if not os.path.exists(location):
        return [], []  # killed before it created its store: nothing stored
    # Read-only URI: the harness must never be the one that changes a store it is judging.
    db = sqlite3.connect(f"file:{location}?mode=ro", uri=True, timeout=5)
    try:
        cursor = db.execute(sql)
        return [d[0] for d in cursor.description or ()], cursor.fetchall()
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):
            return [], []  # killed between creating the file and creating its schema
        raise KilltestError(f"{spec.where(spec_key)}: store.{spec_key} failed on the store: {error}") from None
    except sqlite3.DatabaseError as error:
        raise KilltestError(f"{spec.where('path')}: {location} is not a readable SQLite file: {error}") from None
    finally:
        db.close()


def _postgres_query(spec: StoreSpec, dsn: str, sql: str, spec_key: str) -> tuple[list[str], list[tuple]]:
    import psycopg  # only designs with a PostgreSQL store need it

    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as db:
            with db.cursor() as cursor:
                cursor.execute(sql)
                return [d.name for d in cursor.description or ()], cursor.fetchall()
    except psycopg.errors.UndefinedTable:
        return [], []  # killed before it created its schema
    except psycopg.Error as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise KilltestError(f"{spec.where(spec_key)}: store.{spec_key} failed on the store: {message}") from None


def _record(spec: StoreSpec, row: dict) -> StoredRecord:
    """A row (a dict of column -> value) as a StoredRecord; a missing column is the spec's mistake."""
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


def _jsonl_records(spec: StoreSpec, path: str) -> list[StoredRecord]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as lines:
        return [_json_record(spec, f"line {number}", line) for number, line in enumerate(lines, start=1)
                if line.strip()]


def _json_file_records(spec: StoreSpec, directory: str) -> list[StoredRecord]:
    """Each *.json file in `directory` is one record (Crawlee's file-system dataset); names that start
    with `__` are the framework's own metadata."""
    if not os.path.isdir(directory):
        return []
    names = sorted(n for n in os.listdir(directory) if n.endswith(".json") and not n.startswith("__"))
    records = []
    for name in names:
        with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as file:
            records.append(_json_record(spec, f"file {name}", file.read()))
    return records


def _json_record(spec: StoreSpec, where: str, text: str) -> StoredRecord:
    try:
        row = json.loads(text)
    except ValueError:
        # A line torn by SIGKILL, or two writes run together: a broken record, not a skipped one.
        return StoredRecord(None, unreadable=f"{where} is not JSON: {text.strip()[:60]}")
    if not isinstance(row, dict):
        return StoredRecord(None, unreadable=f"{where} is not a JSON object")
    return _record(spec, row) if spec.key in row else StoredRecord(None, unreadable=f"{where} has no {spec.key!r}")


def _redis_records(spec: StoreSpec, url: str) -> list[StoredRecord]:
    """Each value of the hash `records` is one record as a JSON object."""
    import redis

    with redis.Redis.from_url(url) as client:
        try:
            values = client.hvals(spec.records)
        except redis.exceptions.ResponseError as error:
            raise KilltestError(f"{spec.where('records')}: store.records {spec.records!r} is not a Redis hash:"
                                f" {error}") from None
    records = []
    for number, value in enumerate(values, start=1):
        try:
            row = json.loads(value)
        except ValueError:
            records.append(StoredRecord(None, unreadable=f"value {number} of {spec.records} is not JSON"))
            continue
        records.append(_record(spec, row) if isinstance(row, dict) and spec.key in row else
                       StoredRecord(None, unreadable=f"value {number} of {spec.records} has no {spec.key!r}"))
    return records


def _redis_members(spec: StoreSpec, url: str) -> list[str]:
    """The paths in the Redis list or set `leases` (for BullMQ, a queue's active job IDs)."""
    import redis

    with redis.Redis.from_url(url) as client:
        kind = client.type(spec.leases).decode()
        members = client.lrange(spec.leases, 0, -1) if kind == "list" else client.smembers(spec.leases) \
            if kind == "set" else []
    return sorted(m.decode() for m in members)


def _text(value) -> str:
    return "" if value is None else str(value)


def _seconds(value) -> float | None:
    if value is None:
        return None
    if hasattr(value, "timestamp"):  # a PostgreSQL timestamptz comes back as a datetime
        return value.timestamp()
    return float(value)
