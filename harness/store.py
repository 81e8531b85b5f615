"""Read back what a design stored, with the design's own queries, without changing it."""

from __future__ import annotations

import os
import sqlite3

from harness.designs import Design


def _query(db_path: str, sql: str) -> list[tuple]:
    if not os.path.exists(db_path):
        return []  # killed before it created its store: nothing stored
    # Read-only URI: the harness must never be the one that changes a store it is judging.
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
    try:
        return db.execute(sql).fetchall()
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):
            return []  # killed between creating the file and creating its schema
        raise
    finally:
        db.close()


def stored_records(design: Design, db_path: str) -> list[tuple[str, str, float | None]]:
    """Every stored row as (natural key, value, stored at); duplicates stay in, the checker counts them.

    `stored at` is the design's own time.time() of the write when its query returns a third column.
    """
    rows = _query(db_path, design.records_sql)
    return [(str(row[0]), str(row[1]), float(row[2]) if len(row) > 2 and row[2] is not None else None)
            for row in rows]


def held_leases(design: Design, db_path: str) -> list[str]:
    """Paths the design had claimed but not committed when it was last stopped."""
    if design.held_leases_sql is None:
        return []
    return [row[0] for row in _query(db_path, design.held_leases_sql)]
