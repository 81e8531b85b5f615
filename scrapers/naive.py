"""The naive design: start from the first page every time and insert one auto-increment row per product.

It remembers nothing between starts, so every restart fetches the whole site again and stores every
product it reaches once more. killtest ships it as the control that shows what the kills do.
"""

from __future__ import annotations

import sqlite3
import time

import requests

from killtest.scrapers.common import FIRST_PAGE, LISTING_LINK, PRODUCT_LINK, emit, fetch, parse_args, parse_product

INSERT = "INSERT INTO products (url, sku, price, name, scraped_at) VALUES (?, ?, ?, ?, ?)"
SCHEMA = """
CREATE TABLE IF NOT EXISTS products (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    url TEXT NOT NULL,
    sku TEXT NOT NULL,
    price TEXT NOT NULL,
    name TEXT NOT NULL,
    scraped_at REAL NOT NULL
);
"""


def crawl(db: sqlite3.Connection, base: str, session: requests.Session) -> None:
    """Follow the pagination from the first listing page, storing each product as it is fetched."""
    page: str | None = FIRST_PAGE
    while page is not None:
        listing = fetch(session, base + page)
        for path in PRODUCT_LINK.findall(listing):
            product = parse_product(fetch(session, base + path))
            with db:  # commit as it goes, one row per product fetched
                db.execute(INSERT, (path, product["sku"], product["price"], product["name"], time.time()))
        next_pages = LISTING_LINK.findall(listing)
        page = next_pages[0] if next_pages else None


def main(argv: list[str] | None = None, name: str = "naive", crawl=crawl) -> None:
    """Run `crawl` (this design's, or a variant's: naive_page_commit) on a fresh or resumed store."""
    args = parse_args(name, argv)
    db = sqlite3.connect(args.db)
    db.executescript(SCHEMA)
    emit("ready")
    crawl(db, args.base, requests.Session())
    emit("finished")


if __name__ == "__main__":
    main()
