"""The idempotent design: it can be killed between any two lines and still ends with one row per product.

Four decisions, after the article (seeds/000):
1. record IDs derived from the data (source and SKU), so a repeated write is an update, not a new row;
2. a durable frontier in the same SQLite file, where re-discovering a known URL is a no-op;
3. the record and the "done" mark for its URL committed in one transaction;
4. leases that expire instead of locks, so a URL claimed by a start that was killed comes back by itself.

The frontier holds paths, not absolute URLs: a page's identity does not depend on the port the site
happens to be served on.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time

import requests

from scrapers.common import FIRST_PAGE, LISTING_LINK, PRODUCT_LINK, emit, fetch, parse_args, parse_product

SOURCE = "killtest-fixture-shop"

SCHEMA = """
CREATE TABLE IF NOT EXISTS frontier (
    path TEXT PRIMARY KEY,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'leased', 'done')),
    leased_until REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS records (
    record_id TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    data TEXT NOT NULL,
    first_seen REAL NOT NULL,
    last_changed REAL NOT NULL
);
"""

# The longest nap while another start's lease runs out; short enough to notice the frontier draining.
MAX_WAIT_S = 1.0


def open_store(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)  # transactions are explicit, below
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA busy_timeout=5000")
    db.executescript(SCHEMA)
    return db


def record_id(sku: str) -> str:
    """The same product gets the same ID in every run and on every machine."""
    return hashlib.sha256(f"{SOURCE}:{sku}".encode()).hexdigest()[:16]


def discover(db: sqlite3.Connection, paths: list[str]) -> None:
    db.executemany("INSERT OR IGNORE INTO frontier (path) VALUES (?)", [(p,) for p in paths])


def claim(db: sqlite3.Connection, lease_s: float) -> str | None:
    """Lease the oldest claimable path: pending, or leased by a start whose lease has run out."""
    now = time.time()
    row = db.execute(
        "UPDATE frontier SET status = 'leased', leased_until = ? WHERE path = ("
        " SELECT path FROM frontier WHERE status = 'pending' OR (status = 'leased' AND leased_until < ?)"
        " ORDER BY rowid LIMIT 1) RETURNING path", (now + lease_s, now)).fetchone()
    return row[0] if row else None


def complete(db: sqlite3.Connection, path: str, discovered: list[str] = (), record: dict | None = None) -> None:
    """Store what the page gave and mark it done, in one transaction: both happen or neither does."""
    db.execute("BEGIN IMMEDIATE")
    try:
        discover(db, list(discovered))
        if record is not None:
            payload = json.dumps(record, sort_keys=True)
            digest = hashlib.sha256(payload.encode()).hexdigest()
            now = time.time()
            # The WHERE clause leaves an unchanged record alone, so last_changed means what it says.
            db.execute(
                "INSERT INTO records (record_id, path, content_hash, data, first_seen, last_changed)"
                " VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (record_id) DO UPDATE SET data = excluded.data,"
                " content_hash = excluded.content_hash, last_changed = excluded.last_changed"
                " WHERE records.content_hash != excluded.content_hash",
                (record_id(record["sku"]), path, digest, payload, now, now))
        db.execute("UPDATE frontier SET status = 'done' WHERE path = ?", (path,))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def seconds_until_a_lease_expires(db: sqlite3.Connection) -> float | None:
    """None when every path is done; otherwise how long until the first held lease runs out."""
    row = db.execute("SELECT COUNT(*), MIN(CASE WHEN status = 'leased' THEN leased_until END)"
                     " FROM frontier WHERE status != 'done'").fetchone()
    if row[0] == 0:
        return None
    return max(0.0, (row[1] or 0.0) - time.time())


def crawl(db: sqlite3.Connection, base: str, session: requests.Session, lease_s: float) -> None:
    discover(db, [FIRST_PAGE])
    while True:
        path = claim(db, lease_s)
        if path is None:
            wait_s = seconds_until_a_lease_expires(db)
            if wait_s is None:
                return
            # A lease is still held, most likely by a start that was killed: wait for it, do not exit.
            nap = min(MAX_WAIT_S, wait_s + 0.01)
            emit("lease_wait", seconds=round(nap, 4))
            time.sleep(nap)
            continue
        html = fetch(session, base + path)
        if path.startswith("/list/"):
            complete(db, path, discovered=PRODUCT_LINK.findall(html) + LISTING_LINK.findall(html))
        else:
            sku, price = parse_product(html)
            complete(db, path, record={"sku": sku, "price": price})


def main(argv: list[str] | None = None) -> None:
    args = parse_args("idempotent", argv, with_lease=True)
    db = open_store(args.db)
    emit("ready")
    crawl(db, args.base, requests.Session(), args.lease)
    emit("finished")


if __name__ == "__main__":
    main()
