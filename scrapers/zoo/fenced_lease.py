"""Leases with a fenced commit: the claim hands out a token, and the commit succeeds only while it is current.

The idempotent design with Firecrawl's fencing (`UPDATE ... WHERE id = $1 AND lock = $2`): each claim
of a page increments its token and the claimer keeps it; the done mark is `UPDATE frontier ... WHERE
crawl = ? AND path = ? AND token = ?`, in the same transaction as the record write, and when it
changes no row (another worker claimed the page since) the whole transaction is rolled back. A worker
woken from a pause past its lease therefore writes nothing (it prints `fenced`). It reports its claims
and commits like scrapers/zoo/unfenced_lease.py, the same design without the fence.
"""

from __future__ import annotations

import os
import sqlite3
import time

from killtest.scrapers import idempotent
from killtest.scrapers.common import emit

FENCED_CLAIM = idempotent.CLAIM.replace("leased_until = ?", "leased_until = ?, token = token + 1").replace(
    "RETURNING path, leased_until", "RETURNING path, token")
assert FENCED_CLAIM != idempotent.CLAIM and "RETURNING path, token" in FENCED_CLAIM
HELD = "UPDATE frontier SET status = 'done' WHERE crawl = ? AND path = ? AND token = ? AND status = 'leased'"

_open_store = idempotent.open_store
_tokens: dict[tuple[int, str], int] = {}  # (crawl, path) -> the token this worker's claim got


def open_store(path: str) -> sqlite3.Connection:
    db = _open_store(path)
    if "token" not in [row[1] for row in db.execute("PRAGMA table_info(frontier)")]:
        try:
            db.execute("ALTER TABLE frontier ADD COLUMN token INTEGER NOT NULL DEFAULT 0")
        except sqlite3.OperationalError as error:  # another worker added it first
            if "duplicate column" not in str(error):
                raise
    return db


def claim(db, crawl: int, lease_s: float) -> str | None:
    now = time.time()
    row = db.execute(FENCED_CLAIM, (now + lease_s, crawl, crawl, now)).fetchone()
    if row is None:
        return None
    path, token = row
    _tokens[(crawl, path)] = token
    emit("claimed", path=path, lease_s=lease_s, token=token, pid=os.getpid())
    return path


def _fenced(db, crawl: int, path: str, write) -> bool:
    """Run `write` and the done mark in one transaction, only while this worker's token is the page's."""
    token = _tokens.pop((crawl, path), None)
    db.execute("BEGIN IMMEDIATE")
    try:
        if db.execute(HELD, (crawl, path, token)).rowcount != 1:
            db.execute("ROLLBACK")
            emit("fenced", path=path, token=token, pid=os.getpid())
            return False
        write()
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    emit("committed", path=path, token=token, pid=os.getpid())
    return True


def complete(db, crawl: int, path: str, discovered=(), record=None) -> None:
    def write() -> None:
        idempotent.discover(db, crawl, list(discovered))
        if record is not None:
            idempotent.save_record(db, path, record)

    _fenced(db, crawl, path, write)


def forget(db, crawl: int, path: str) -> None:
    _fenced(db, crawl, path, lambda: db.execute("DELETE FROM records WHERE path = ?", (path,)))


def main(argv=None) -> None:
    idempotent.open_store, idempotent.claim, idempotent.complete, idempotent.forget = open_store, claim, complete, forget
    idempotent.main(argv)


if __name__ == "__main__":
    main()
