"""Zoo: records and progress in two SQLite files, the records' with synchronous=OFF: safe under every
SIGKILL, not under a power cut.

Each page is fetched, its record upserted into `records.sqlite` (WAL, `PRAGMA synchronous` = `SYNCHRONOUS`)
in a transaction of its own, and then the page is marked done in `frontier.sqlite` (WAL, synchronous FULL:
durable at every commit). A start killed between the two commits is finished by the next one, which
finds the page's record and marks the page done without fetching it again, so no kill point loses a
record or costs a refetch: the kernel keeps what a killed process wrote. A power
cut keeps only what an fsync covered: with synchronous=OFF SQLite never fsyncs the records, so the cut
takes them while the done marks stay, and the next start skips those pages for good (a hole). The fixed
twin (`scrapers/zoo/split_stores_full.py`, design `split-stores-full`) differs by one pragma: FULL.
"""

from __future__ import annotations

import os
import sqlite3
import time

import requests

from killtest.scrapers.common import FIRST_PAGE, LISTING_LINK, PRODUCT_LINK, emit, fetch_page, parse_args, parse_product

SYNCHRONOUS = "OFF"  # the mistake; split_stores_full.py sets FULL


def open_stores(records_path: str) -> tuple[sqlite3.Connection, sqlite3.Connection]:
    records = sqlite3.connect(records_path, isolation_level=None)
    records.execute("PRAGMA journal_mode=WAL")
    records.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
    records.execute("CREATE TABLE IF NOT EXISTS records (sku TEXT PRIMARY KEY, path TEXT, price TEXT, name TEXT,"
                    " scraped_at REAL)")
    frontier = sqlite3.connect(os.path.join(os.path.dirname(records_path), "frontier.sqlite"), isolation_level=None)
    frontier.execute("PRAGMA journal_mode=WAL")
    frontier.execute("PRAGMA synchronous=FULL")
    frontier.execute("CREATE TABLE IF NOT EXISTS pages (path TEXT PRIMARY KEY, done INTEGER NOT NULL DEFAULT 0)")
    return records, frontier


def discover(frontier: sqlite3.Connection, paths: list[str]) -> None:
    frontier.executemany("INSERT OR IGNORE INTO pages (path) VALUES (?)", [(p,) for p in paths])


def save_record(records: sqlite3.Connection, path: str, product: dict) -> None:
    records.execute("INSERT INTO records (sku, path, price, name, scraped_at) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT (sku) DO UPDATE SET price = excluded.price, name = excluded.name,"
                    " scraped_at = excluded.scraped_at",
                    (product["sku"], path, product["price"], product["name"], time.time()))


def mark_done(frontier: sqlite3.Connection, path: str, links: list[str]) -> None:
    frontier.execute("BEGIN IMMEDIATE")
    discover(frontier, links)
    frontier.execute("UPDATE pages SET done = 1 WHERE path = ?", (path,))
    frontier.execute("COMMIT")


def crawl(records: sqlite3.Connection, frontier: sqlite3.Connection, base: str) -> None:
    session = requests.Session()
    discover(frontier, [FIRST_PAGE])
    while True:
        row = frontier.execute("SELECT path FROM pages WHERE done = 0 ORDER BY rowid LIMIT 1").fetchone()
        if row is None:
            return
        path = row[0]
        if records.execute("SELECT 1 FROM records WHERE path = ?", (path,)).fetchone():
            mark_done(frontier, path, [])  # killed between the two commits: finish the second, no refetch
            continue
        html = fetch_page(session, base + path, path)
        if path.startswith("/product/"):
            save_record(records, path, parse_product(html))
        mark_done(frontier, path, PRODUCT_LINK.findall(html) + LISTING_LINK.findall(html))


def main(argv: list[str] | None = None) -> None:
    args = parse_args("split-stores", argv)
    records, frontier = open_stores(args.db)
    emit("ready")
    crawl(records, frontier, args.base)
    emit("finished")


if __name__ == "__main__":
    main()
