"""Zoo: a frontier kept in memory. Records are upserted by derived ID, but every restart crawls from scratch.

The rows stay right; the requests do not: each kill costs everything fetched before it.
"""

from __future__ import annotations

import requests

from killtest.scrapers import idempotent
from killtest.scrapers.common import FIRST_PAGE, LISTING_LINK, PRODUCT_LINK, emit, fetch, parse_args, parse_product
from killtest.scrapers.zoo.transactions import in_transaction


def crawl_site(db, base: str, session: requests.Session) -> None:
    frontier, seen = [FIRST_PAGE], {FIRST_PAGE}  # gone with the process
    while frontier:
        path = frontier.pop(0)
        html = fetch(session, base + path)
        if path.startswith("/list/"):
            for link in PRODUCT_LINK.findall(html) + LISTING_LINK.findall(html):
                if link not in seen:
                    seen.add(link)
                    frontier.append(link)
        else:
            record = parse_product(html)
            in_transaction(db, lambda: idempotent.save_record(db, path, record))


def main(argv=None) -> None:
    args = parse_args("memory-frontier", argv, with_lease=True)
    db = idempotent.open_store(args.db)
    emit("ready")
    crawl_site(db, args.base, requests.Session())
    emit("finished")


if __name__ == "__main__":
    main()
