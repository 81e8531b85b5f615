"""The naive design committing once per listing page: the same crawl and rows as `naive`, fewer flushes.

The article says its naive scraper "inserts a row for every product and commits as it goes", which does
not say how often it commits. `naive` reads it as a commit per product (about four flushes a product
in SQLite's rollback journal); this design reads it as a commit per listing page (20 products, one
transaction). It still starts from the first page every time and inserts an auto-increment row for
every product it fetches, so every restart stores again what earlier starts stored: a control, like
`naive`. A kill loses the uncommitted rows of the page it lands in, which a later start fetches again.
"""

from __future__ import annotations

import sqlite3
import time

import requests

from killtest.scrapers import naive
from killtest.scrapers.common import FIRST_PAGE, LISTING_LINK, PRODUCT_LINK, fetch, parse_product
from killtest.scrapers.naive import INSERT


def crawl(db: sqlite3.Connection, base: str, session: requests.Session) -> None:
    """Follow the pagination from the first listing page, storing a page's products in one transaction."""
    page: str | None = FIRST_PAGE
    while page is not None:
        listing = fetch(session, base + page)
        with db:  # commit as it goes, once per listing page: one row per product fetched on it
            for path in PRODUCT_LINK.findall(listing):
                product = parse_product(fetch(session, base + path))
                db.execute(INSERT, (path, product["sku"], product["price"], product["name"], time.time()))
        next_pages = LISTING_LINK.findall(listing)
        page = next_pages[0] if next_pages else None


def main(argv: list[str] | None = None) -> None:
    naive.main(argv, "naive-page-commit", crawl)


if __name__ == "__main__":
    main()
