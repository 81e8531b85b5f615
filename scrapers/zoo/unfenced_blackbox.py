"""Zoo: leases without fencing, seen only from outside: the article's `complete()`, and no events.

scrapers/zoo/unfenced_lease.py reports its claims and commits, so the checker judges its zombie writes
from its own words. This one says nothing: a zombie write shows only in the store, as a price put back
over the one the site shows now, which an aimed pause (--aim-pauses) makes happen on every run.
"""

from __future__ import annotations

from killtest.scrapers import idempotent


def main(argv=None) -> None:
    idempotent.FENCE_COMMITS = False  # the article's complete(): the done mark whoever holds the lease now
    idempotent.main(argv)


if __name__ == "__main__":
    main()
