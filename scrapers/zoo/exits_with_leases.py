"""Zoo: a loop that exits when nothing is claimable, although leases are still held.

After a kill, the page the killed start had claimed is still leased; the next start finds nothing
else to do and stops, so that page is never fetched again.
"""

from __future__ import annotations

from killtest.scrapers import idempotent


def crawl_site(db, crawl, base, session, lease_s) -> None:
    idempotent.discover(db, crawl, [idempotent.FIRST_PAGE])
    while (path := idempotent.claim(db, crawl, lease_s)) is not None:
        idempotent.scrape(db, crawl, base, session, path)
    # nothing claimable right now is taken to mean "done": the held lease is forgotten


def main(argv=None) -> None:
    idempotent.crawl_site = crawl_site
    idempotent.main(argv)


if __name__ == "__main__":
    main()
