"""The idempotent design on PostgreSQL: the same four decisions, for many workers on one database.

1. record IDs derived from the data (source and SKU), upserted;
2. a durable frontier table, per crawl;
3. the record and the page's done mark committed in one transaction;
4. leases that expire, claimed with one statement: `FOR UPDATE SKIP LOCKED` picks the oldest
   claimable path no other transaction is claiming, so two workers never take the same page while
   its lease holds, and neither waits on the other's row lock; the done mark is fenced by the lease's
   deadline, so a worker woken past its lease commits nothing once another has claimed its page.

Leases run on the database's clock (now()), the one clock every worker shares. The crawl loop is
the SQLite design's (killtest.scrapers.idempotent); only the store underneath differs.
"""

from __future__ import annotations


import psycopg
import requests

from killtest.scrapers import idempotent
from killtest.scrapers.common import emit, parse_args

SCHEMA = """
CREATE TABLE IF NOT EXISTS frontier (
    seq BIGSERIAL,
    crawl INTEGER NOT NULL,
    path TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'leased', 'done')),
    leased_until TIMESTAMPTZ NOT NULL DEFAULT 'epoch',
    PRIMARY KEY (crawl, path)
);
CREATE INDEX IF NOT EXISTS frontier_claimable ON frontier (crawl, seq) WHERE status != 'done';
CREATE TABLE IF NOT EXISTS records (
    record_id TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    data JSONB NOT NULL,
    first_seen DOUBLE PRECISION NOT NULL,
    last_changed DOUBLE PRECISION NOT NULL
);
"""
SCHEMA_LOCK = 5_000_001  # an advisory lock: two workers creating the schema at once would collide


def open_store(dsn: str) -> psycopg.Connection:
    db = psycopg.connect(dsn, autocommit=True)
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        db.execute(SCHEMA)
    return db


def discover(db: psycopg.Connection, crawl: int, paths: list[str]) -> None:
    with db.cursor() as cursor:
        cursor.executemany("INSERT INTO frontier (crawl, path) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                           [(crawl, p) for p in paths])


def claim(db: psycopg.Connection, crawl: int, lease_s: float) -> str | None:
    """Lease the oldest claimable path in one statement; rows another worker is claiming are skipped."""
    row = db.execute(
        "UPDATE frontier SET status = 'leased', leased_until = now() + make_interval(secs => %s)"
        " WHERE (crawl, path) = (SELECT crawl, path FROM frontier WHERE crawl = %s AND status != 'done'"
        "  AND (status = 'pending' OR leased_until < now()) ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)"
        " RETURNING path, leased_until", (lease_s, crawl)).fetchone()
    return idempotent.hold(db, crawl, row)  # the lease's deadline is its fencing token, as in the SQLite design


def save_record(db: psycopg.Connection, path: str, record: dict) -> None:
    """Upsert by derived ID, with the SQLite design's statement."""
    db.execute(idempotent.UPSERT_RECORD.replace("?", "%s"), idempotent.record_row(path, record))


def mark_done(db: psycopg.Connection, crawl: int, path: str) -> None:
    """The done mark, fenced: only while this worker's lease is the page's current one (else LeaseLost,
    and the transaction around it rolls the record write back), as the SQLite design's fenced_done."""
    idempotent.fenced_done(db, crawl, path, placeholder="%s")


def complete(db: psycopg.Connection, crawl: int, path: str, discovered: list[str] = (),
             record: dict | None = None) -> None:
    """Store what the page gave and mark it done, in one transaction: both happen or neither does."""
    with db.transaction():
        discover(db, crawl, list(discovered))
        if record is not None:
            save_record(db, path, record)
        mark_done(db, crawl, path)


def forget(db: psycopg.Connection, crawl: int, path: str) -> None:
    with db.transaction():
        db.execute("DELETE FROM records WHERE path = %s", (path,))
        mark_done(db, crawl, path)


def sweep(db: psycopg.Connection, crawl: int) -> int:
    return db.execute("DELETE FROM records WHERE path NOT IN"
                      " (SELECT path FROM frontier WHERE crawl = %s AND status = 'done')", (crawl,)).rowcount


def seconds_until_a_lease_expires(db: psycopg.Connection, crawl: int) -> float | None:
    """None when every path of the crawl is done; otherwise how long until the first held lease runs out."""
    count, seconds = db.execute(
        "SELECT COUNT(*), EXTRACT(EPOCH FROM MIN(leased_until) FILTER (WHERE status = 'leased') - now())"
        " FROM frontier WHERE crawl = %s AND status != 'done'", (crawl,)).fetchone()
    if count == 0:
        return None
    return max(0.0, float(seconds or 0.0))


def main(argv: list[str] | None = None) -> None:
    args = parse_args("idempotent-pg", argv, with_lease=True, store="dsn")
    # The loop, the page handling and the lease wait are the SQLite design's; these are the store.
    idempotent.discover, idempotent.claim, idempotent.complete = discover, claim, complete
    idempotent.seconds_until_a_lease_expires = seconds_until_a_lease_expires
    idempotent.forget, idempotent.sweep = forget, sweep
    db = open_store(args.dsn)
    emit("ready")
    idempotent.crawl_site(db, args.crawl, args.base, requests.Session(), args.lease)
    emit("finished")


if __name__ == "__main__":
    main()
