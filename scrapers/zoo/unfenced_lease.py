"""Zoo: leases without fencing, the article's `complete()`: it commits without checking its lease is still held.

The idempotent design itself, reporting its claims and commits (`claimed`, `committed`) so the checker
can see who held a page when. A worker paused past its lease (a GC pause, a frozen VM, SIGSTOP) wakes
up and commits the page another worker claimed meanwhile: a zombie write. With drift in between it puts
back a price the site no longer shows. scrapers/zoo/fenced_lease.py is the same design with a fenced
commit, which refuses it.
"""

from __future__ import annotations

import os

from killtest.scrapers import idempotent
from killtest.scrapers.common import emit

_claim, _complete = idempotent.claim, idempotent.complete


def claim(db, crawl: int, lease_s: float) -> str | None:
    path = _claim(db, crawl, lease_s)
    if path is not None:
        emit("claimed", path=path, lease_s=lease_s, pid=os.getpid())
    return path


def complete(db, crawl: int, path: str, discovered=(), record=None) -> None:
    """The article's commit: the record and the done mark in one transaction, whoever holds the lease now."""
    _complete(db, crawl, path, discovered, record)
    emit("committed", path=path, pid=os.getpid())


def main(argv=None) -> None:
    idempotent.FENCE_COMMITS = False  # the article's complete(): the done mark whoever holds the lease now
    idempotent.claim, idempotent.complete = claim, complete
    idempotent.main(argv)


if __name__ == "__main__":
    main()
