"""The idempotent design: it can be killed between any two lines and still ends with one row per product.

Four decisions, after the article (seeds/000):
1. record IDs derived from the data (source and SKU), so a repeated write is an update, not a new row;
2. a durable frontier in the same SQLite file, where re-discovering a known URL is a no-op;
3. the record and the "done" mark for its URL committed in one transaction;
4. leases that expire instead of locks, so a URL claimed by a start that was killed comes back by itself;
   and, beyond the article, a fenced commit: the done mark holds only while the claim's lease is still the
   page's current one (its deadline is the fencing token), so a worker woken from a pause past its lease,
   whose page another worker has claimed since, commits nothing (Firecrawl's `WHERE id = $1 AND lock = $2`).

The frontier holds paths, not absolute URLs: a page's identity does not depend on the port the site
happens to be served on. It is kept per crawl (`--crawl`), so a scheduled re-crawl of the same store
visits every page again and rewrites only the records whose content changed.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time

import requests

from killtest.scrapers.common import (FIRST_PAGE, LISTING_LINK, PRODUCT_LINK, TransientPageError, emit, fetch_page, parse_args,
                             parse_product)

SOURCE = "killtest-fixture-shop"

SCHEMA = """
CREATE TABLE IF NOT EXISTS frontier (
    crawl INTEGER NOT NULL,
    path TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'leased', 'done')),
    leased_until REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (crawl, path)
);
-- What claim() looks up: a crawl's oldest pending path and its leased ones, without touching done rows.
CREATE INDEX IF NOT EXISTS frontier_by_status ON frontier (crawl, status);
CREATE TABLE IF NOT EXISTS records (
    record_id TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    data TEXT NOT NULL,
    first_seen REAL NOT NULL,
    last_changed REAL NOT NULL
);
"""

# The upsert, shared with killtest.scrapers.idempotent_pg (which runs it with %s placeholders). Its WHERE clause
# leaves an unchanged record alone, so last_changed means what it says.
UPSERT_RECORD = (
    "INSERT INTO records (record_id, path, content_hash, data, first_seen, last_changed)"
    " VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (record_id) DO UPDATE SET data = excluded.data,"
    " content_hash = excluded.content_hash, last_changed = excluded.last_changed"
    " WHERE records.content_hash != excluded.content_hash")

# Two index lookups, not a scan of the crawl: the first pending row by (crawl, status, rowid), and the
# expired leases among the few leased rows. Done rows are never read, so a claim costs the same at the
# 50,000th page as at the first (an OR of both conditions scanned the whole crawl: O(n^2) a crawl).
CLAIM = ("UPDATE frontier SET status = 'leased', leased_until = ? WHERE rowid = (SELECT MIN(id) FROM ("
         " SELECT MIN(rowid) AS id FROM frontier WHERE crawl = ? AND status = 'pending' UNION ALL"
         " SELECT MIN(rowid) FROM frontier WHERE crawl = ? AND status = 'leased' AND leased_until < ?))"
         " RETURNING path, leased_until")

# The longest nap while a lease is held, by a killed start or a live worker (1 s naps left 8 workers no faster than 1).
MAX_WAIT_S = 0.05


def open_store(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=60.0, isolation_level=None, check_same_thread=False)  # transactions are explicit
    # timeout is busy_timeout from the first statement on: a peer paused while it holds the lock is outwaited
    to_wal(db)  # (tests/test_idempotent_lock_wait.py), and so is a peer's switch of a new file to WAL
    db.executescript(SCHEMA)
    return db


def record_id(sku: str) -> str:
    """The same product gets the same ID in every run and on every machine."""
    return hashlib.sha256(f"{SOURCE}:{sku}".encode()).hexdigest()[:16]


def discover(db: sqlite3.Connection, crawl: int, paths: list[str]) -> None:
    db.executemany("INSERT OR IGNORE INTO frontier (crawl, path) VALUES (?, ?)", [(crawl, p) for p in paths])


def claim(db: sqlite3.Connection, crawl: int, lease_s: float) -> str | None:
    """Lease the oldest claimable path: pending, or leased by a start whose lease has run out. The lease
    starts once the write lock is held: time spent waiting for another worker's commit is not lease time."""
    db.execute("BEGIN IMMEDIATE")
    try:
        now = time.time()
        row = db.execute(CLAIM, (now + lease_s, crawl, crawl, now)).fetchone()
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return hold(db, crawl, row)


def record_row(path: str, record: dict) -> tuple:
    """The columns of UPSERT_RECORD for `record`, written now."""
    payload = json.dumps(record, sort_keys=True)
    now = time.time()
    return record_id(record["sku"]), path, hashlib.sha256(payload.encode()).hexdigest(), payload, now, now


def save_record(db: sqlite3.Connection, path: str, record: dict) -> None:
    """Upsert by derived ID."""
    db.execute(UPSERT_RECORD, record_row(path, record))


def mark_done(db: sqlite3.Connection, crawl: int, path: str) -> None:
    fenced_done(db, crawl, path)


def complete(db: sqlite3.Connection, crawl: int, path: str, discovered: list[str] | tuple[str, ...] = (),
             record: dict | None = None) -> None:
    """Store what the page gave and mark it done, in one transaction: both happen or neither does."""
    db.execute("BEGIN IMMEDIATE")
    try:
        discover(db, crawl, list(discovered))
        if record is not None:
            save_record(db, path, record)
        mark_done(db, crawl, path)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def forget(db: sqlite3.Connection, crawl: int, path: str) -> None:
    """The page is gone from the site (404): drop its record and mark the page done, in one transaction."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("DELETE FROM records WHERE path = ?", (path,))
        mark_done(db, crawl, path)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def sweep(db: sqlite3.Connection, crawl: int) -> int:
    """Once every page of the crawl is done: drop the records of pages the crawl no longer reached
    (products the site took away). Idempotent, so a kill in the middle only means doing it again."""
    return db.execute("DELETE FROM records WHERE path NOT IN"
                      " (SELECT path FROM frontier WHERE crawl = ? AND status = 'done')", (crawl,)).rowcount


def seconds_until_a_lease_expires(db: sqlite3.Connection, crawl: int) -> float | None:
    """None when every path of the crawl is done; otherwise how long until the first held lease runs out."""
    row = db.execute("SELECT COUNT(*), MIN(CASE WHEN status = 'leased' THEN leased_until END)"
                     " FROM frontier WHERE crawl = ? AND status IN ('pending', 'leased')", (crawl,)).fetchone()
    if row[0] == 0:
        return None
    return max(0.0, (row[1] or 0.0) - time.time())


def wait_for_leases(db: sqlite3.Connection, crawl: int) -> bool:
    """Sleep while another start's lease runs out; False once the crawl has nothing left to do."""
    wait_s = seconds_until_a_lease_expires(db, crawl)
    if wait_s is None:
        return False
    # A lease is still held, most likely by a start that was killed: wait for it, do not exit.
    nap = min(MAX_WAIT_S, wait_s + 0.01)
    emit("lease_wait", seconds=round(nap, 4))
    time.sleep(nap)
    return True


def scrape(db: sqlite3.Connection, crawl: int, base: str, session: requests.Session, path: str) -> None:
    """Fetch one claimed page and commit what it gave.

    A page that kept failing is left claimed: its lease runs out and a later claim, by this start or
    another, tries it again. Exiting instead would stop every other page with it.
    """
    try:
        html = fetch_page(session, base + path, path)
        record = None if path.startswith("/list/") else parse_product(html)
    except requests.HTTPError as error:
        if error.response is None or error.response.status_code != 404 or not path.startswith("/product/"):
            raise
        forget(db, crawl, path)  # the product left the site between its listing and its fetch
        return
    except TransientPageError as error:
        emit("page_deferred", path=path, reason=error.reason)
        return
    if record is None:
        complete(db, crawl, path, discovered=PRODUCT_LINK.findall(html) + LISTING_LINK.findall(html))
    else:
        complete(db, crawl, path, record=record)


def crawl_site(db: sqlite3.Connection, crawl: int, base: str, session: requests.Session, lease_s: float) -> None:
    discover(db, crawl, [FIRST_PAGE])
    while True:
        path = claim(db, crawl, lease_s)
        if path is not None:
            try:
                scrape(db, crawl, base, session, path)
            except LeaseLost:  # woken past its lease: another worker has the page, and its commit counts
                emit("lease_lost", path=path)
        elif not wait_for_leases(db, crawl):
            removed = sweep(db, crawl)
            if removed:
                emit("swept", records=removed)
            return


class LeaseLost(Exception):
    """The page was claimed by another worker since this one's lease ran out: its commit is refused."""


FENCE_COMMITS = True  # scrapers/zoo/unfenced_lease.py turns it off: the article's complete(), unfenced
# (connection, crawl, path) -> the deadline of the lease this connection's claim got: per connection, so
# two threads of one process (each with its own connection) never take each other's token.
_tokens: dict[tuple[int, int, str], object] = {}


def hold(db: object, crawl: int, row: tuple | None) -> str | None:
    """Keep the claimed lease's deadline as the page's fencing token; the claimed path, or None."""
    if row is None:
        return None
    _tokens[(id(db), crawl, row[0])] = row[1]
    return row[0]


def token_of(db: object, crawl: int, path: str) -> object | None:
    """The fencing token of this connection's claim on the page, taken (a commit uses it once)."""
    return _tokens.pop((id(db), crawl, path), None)


def fenced_done(db, crawl: int, path: str, placeholder: str = "?") -> None:
    """Mark the page done, inside the caller's transaction, only while this worker's lease is the page's
    current one; LeaseLost otherwise, and the caller's ROLLBACK takes the record write back with it.
    The PostgreSQL design runs the same statements with its driver's `%s` placeholder."""
    token = token_of(db, crawl, path)
    done = "UPDATE frontier SET status = 'done' WHERE crawl = ? AND path = ?".replace("?", placeholder)
    if token is None or not FENCE_COMMITS:
        db.execute(done, (crawl, path))
        return
    held = db.execute(f"{done} AND status = 'leased' AND leased_until = {placeholder}", (crawl, path, token)).rowcount
    if held != 1:
        raise LeaseLost(path)


def to_wal(db: sqlite3.Connection) -> None:
    """Put the store in WAL mode. Workers started together on a new file race to switch it, and SQLite answers
    a loser "database is locked" at once, not after busy_timeout: it holds a read lock and wants the write
    lock, and waiting could deadlock. The loser tries again (the switch is done by then, or under way)."""
    deadline = time.monotonic() + 60.0
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def main(argv: list[str] | None = None) -> None:
    args = parse_args("idempotent", argv, with_lease=True)
    db = open_store(args.db)
    emit("ready")
    crawl_site(db, args.crawl, args.base, requests.Session(), args.lease)
    emit("finished")


if __name__ == "__main__":
    main()
