"""My scraper: crawls a shop into SQLite so that a SIGKILL at any line loses and repeats nothing.

Three decisions make it safe to kill: a durable frontier in the same SQLite file as the records;
a page's record, the links it found and its "done" mark committed in one transaction; and the
product's SKU as the record's key, so writing a record again is an update, never a second row.
Only the standard library: `python -m scrapers.shop --base URL --db FILE`.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import urllib.request

LINK = re.compile(r'href="(/(?:list|product)/\d+)"')
FIELD = re.compile(r'class="(sku|name|price)">([^<]+)<')
SCHEMA = """
CREATE TABLE IF NOT EXISTS frontier (path TEXT PRIMARY KEY, done INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS products (sku TEXT PRIMARY KEY, name TEXT NOT NULL, price TEXT NOT NULL);
INSERT OR IGNORE INTO frontier (path) VALUES ('/list/0');
"""


def open_store(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)  # autocommit: transactions are explicit
    db.executescript(SCHEMA)
    return db


def next_page(db: sqlite3.Connection) -> str | None:
    row = db.execute("SELECT path FROM frontier WHERE done = 0 ORDER BY rowid LIMIT 1").fetchone()
    return row[0] if row else None


def complete(db: sqlite3.Connection, path: str, links: list[str], product: dict[str, str] | None) -> None:
    """Everything a page gave, and its done mark, in one transaction: all of it or none of it."""
    db.execute("BEGIN IMMEDIATE")
    db.executemany("INSERT OR IGNORE INTO frontier (path) VALUES (?)", [(link,) for link in links])
    if product is not None:
        db.execute("INSERT INTO products (sku, name, price) VALUES (:sku, :name, :price) ON CONFLICT (sku)"
                   " DO UPDATE SET name = excluded.name, price = excluded.price", product)
    db.execute("UPDATE frontier SET done = 1 WHERE path = ?", (path,))
    db.execute("COMMIT")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the shop's address, http://host:port")
    parser.add_argument("--db", required=True, help="the SQLite file to crawl into")
    args = parser.parse_args()
    db = open_store(args.db)
    while (path := next_page(db)) is not None:
        with urllib.request.urlopen(args.base.rstrip("/") + path, timeout=30) as response:
            html = response.read().decode()
        product = dict(FIELD.findall(html)) if path.startswith("/product/") else None
        complete(db, path, LINK.findall(html), product)


if __name__ == "__main__":
    main()
