"""What several zoo designs share: one piece of work in a transaction of its own.

The work is passed as a function and its arguments, not a lambda, so that a traced line of a zoo
design is executed once per call: `l:FILE:LINE:HIT` then counts pages, not frames.
"""

from __future__ import annotations

import sqlite3

from killtest.scrapers import idempotent


def in_transaction(db: sqlite3.Connection, work, *args) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        work(*args)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def mark_page_done(db: sqlite3.Connection, crawl: int, path: str, discovered) -> None:
    """The progress half of the correct design's transaction: links found, page done."""
    idempotent.discover(db, crawl, list(discovered))
    idempotent.mark_done(db, crawl, path)
