"""The idempotent design with one bug: it marks the URL done in its own transaction, then saves the record.

A crash between the two commits loses the record for good: the frontier says the page is done, so
no later start fetches it again. Timed kills rarely land in that gap; an exact crash point always does.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time

from scrapers import idempotent


def complete(db: sqlite3.Connection, path: str, discovered: list[str] = (), record: dict | None = None) -> None:
    with_transaction(db, lambda: (idempotent.discover(db, list(discovered)),
                                  db.execute("UPDATE frontier SET status = 'done' WHERE path = ?", (path,))))
    if record is not None:
        payload = json.dumps(record, sort_keys=True)
        digest = hashlib.sha256(payload.encode()).hexdigest()
        now = time.time()
        with_transaction(db, lambda: db.execute(
            "INSERT INTO records (record_id, path, content_hash, data, first_seen, last_changed)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (record_id) DO NOTHING",
            (idempotent.record_id(record["sku"]), path, digest, payload, now, now)))


def with_transaction(db: sqlite3.Connection, work) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        work()
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def main(argv: list[str] | None = None) -> None:
    idempotent.complete = complete  # the rest of the design is the correct one
    idempotent.main(argv)


if __name__ == "__main__":
    main()
