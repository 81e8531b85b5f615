"""Zoo: a crawl that never forgets: products the site took away stay in the store for good.

Without a sweep at the end of a crawl (or a delete on a 404), the store keeps records the site no
longer has, and every count built on it drifts upwards.
"""

from __future__ import annotations

from killtest.scrapers import idempotent


def sweep(db, crawl) -> int:
    return 0  # the mistake: nothing the crawl did not reach is ever dropped


def main(argv=None) -> None:
    idempotent.sweep = sweep
    idempotent.main(argv)


if __name__ == "__main__":
    main()
