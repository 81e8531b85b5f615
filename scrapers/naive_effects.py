"""The naive design's side effects: what goes wrong without the rules of scrapers/effects.py.

Every fetch saves the image under a new name, announces the product with a webhook that carries no
idempotency key (and before the row is written), and adds one to a running count.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time

import requests

from killtest.scrapers.common import FIRST_PAGE, LISTING_LINK, PRODUCT_LINK, emit, fetch, parse_args, parse_product
from killtest.scrapers.naive import SCHEMA

IMAGE = re.compile(r'class="photo" src="([^"]+)"')
STATS = "CREATE TABLE IF NOT EXISTS stats (name TEXT PRIMARY KEY, value INTEGER NOT NULL);"


def store_product(db: sqlite3.Connection, base: str, session: requests.Session, images: str, path: str) -> None:
    html = fetch(session, base + path)
    product = parse_product(html)
    source = IMAGE.search(html)
    if source is not None:
        with open(os.path.join(images, f"{path.rsplit('/', 1)[1]}-{time.time_ns()}.png"), "wb") as out:
            out.write(session.get(base + source.group(1), timeout=30).content)
    session.post(base + "/webhook", json=product, timeout=30)  # no key, and before the row exists
    with db:
        db.execute("INSERT INTO products (url, sku, price, name, scraped_at) VALUES (?, ?, ?, ?, ?)",
                   (path, product["sku"], product["price"], product["name"], time.time()))
        db.execute("INSERT INTO stats (name, value) VALUES ('products', 1)"
                   " ON CONFLICT (name) DO UPDATE SET value = value + 1")


def main(argv: list[str] | None = None) -> None:
    args = parse_args("naive-effects", argv)
    images = os.path.join(os.path.dirname(os.path.abspath(args.db)), "images")
    os.makedirs(images, exist_ok=True)
    db = sqlite3.connect(args.db)
    db.executescript(SCHEMA + STATS)
    session = requests.Session()
    emit("ready")
    page: str | None = FIRST_PAGE
    while page is not None:
        listing = fetch(session, args.base + page)
        for path in PRODUCT_LINK.findall(listing):
            store_product(db, args.base, session, images, path)
        next_pages = LISTING_LINK.findall(listing)
        page = next_pages[0] if next_pages else None
    emit("finished")


if __name__ == "__main__":
    main()
