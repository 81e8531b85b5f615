"""Zoo: a lock that never expires. A start killed while it holds one leaves the page locked for good.

The next start waits for the lock, as the correct design waits for a lease, and waits forever.
"""

from __future__ import annotations

from killtest.scrapers import idempotent

LOCK_S = 10 * 365 * 24 * 3600.0  # "until released": a killed start never releases it

_claim = idempotent.claim


def claim(db, crawl, lease_s):
    return _claim(db, crawl, LOCK_S)


def main(argv=None) -> None:
    idempotent.claim = claim
    idempotent.main(argv)


if __name__ == "__main__":
    main()
