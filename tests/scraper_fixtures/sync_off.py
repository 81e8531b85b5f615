"""A design that survives every SIGKILL and not a power cut: a durable frontier, records with synchronous=OFF.

Each page is fetched, its record committed to `records.sqlite` (journal DELETE, `PRAGMA synchronous=OFF`:
SQLite never fsyncs it), and then the page is marked done in `frontier.sqlite` (WAL, synchronous FULL:
durable at every commit). A SIGKILL between the two commits only refetches the page, and a repeated
write is an upsert by SKU, so kills lose nothing. A power cut takes every record no fsync covered while
the done marks stay: the next start skips those pages, and their products are lost for good (a hole).

Run as `python sync_off.py --base URL --db DIR/records.sqlite`; the frontier lives beside the records.
"""

from __future__ import annotations

import os
import sqlite3
import time

import requests

from killtest.scrapers.common import FIRST_PAGE, LISTING_LINK, PRODUCT_LINK, emit, fetch_page, parse_args, parse_product


def open_stores(records_path: str) -> tuple[sqlite3.Connection, sqlite3.Connection]:
    records = sqlite3.connect(records_path, isolation_level=None)
    records.execute("PRAGMA synchronous=OFF")
    records.execute("CREATE TABLE IF NOT EXISTS records (sku TEXT PRIMARY KEY, price TEXT, name TEXT,"
                    " scraped_at REAL)")
    frontier = sqlite3.connect(os.path.join(os.path.dirname(records_path), "frontier.sqlite"), isolation_level=None)
    frontier.execute("PRAGMA journal_mode=WAL")
    frontier.execute("PRAGMA synchronous=FULL")
    frontier.execute("CREATE TABLE IF NOT EXISTS pages (path TEXT PRIMARY KEY, done INTEGER NOT NULL DEFAULT 0)")
    return records, frontier


def discover(frontier: sqlite3.Connection, paths: list[str]) -> None:
    frontier.executemany("INSERT OR IGNORE INTO pages (path) VALUES (?)", [(p,) for p in paths])


def crawl(records: sqlite3.Connection, frontier: sqlite3.Connection, base: str) -> None:
    session = requests.Session()
    discover(frontier, [FIRST_PAGE])
    while True:
        row = frontier.execute("SELECT path FROM pages WHERE done = 0 ORDER BY rowid LIMIT 1").fetchone()
        if row is None:
            return
        path = row[0]
        html = fetch_page(session, base + path, path)
        if path.startswith("/product/"):
            product = parse_product(html)
            records.execute("INSERT INTO records (sku, price, name, scraped_at) VALUES (?, ?, ?, ?)"
                            " ON CONFLICT (sku) DO UPDATE SET price = excluded.price, name = excluded.name",
                            (product["sku"], product["price"], product["name"], time.time()))
        frontier.execute("BEGIN IMMEDIATE")
        discover(frontier, PRODUCT_LINK.findall(html) + LISTING_LINK.findall(html))
        frontier.execute("UPDATE pages SET done = 1 WHERE path = ?", (path,))
        frontier.execute("COMMIT")


def main() -> None:
    args = parse_args("sync-off", None)
    records, frontier = open_stores(args.db)
    emit("ready")
    crawl(records, frontier, args.base)
    emit("finished")


if __name__ == "__main__":
    main()
