"""Zoo: progress committed before the result. The URL is marked done in one transaction, the record saved in the next.

A crash between the two commits loses the record for good: the frontier says the page is done, so
no later start fetches it again. Timed kills rarely land in that gap; an exact crash point always does.
"""

from __future__ import annotations

from killtest.scrapers import idempotent
from killtest.scrapers.zoo.transactions import in_transaction, mark_page_done


def complete(db, crawl, path, discovered=(), record=None) -> None:
    in_transaction(db, mark_page_done, db, crawl, path, discovered)
    if record is not None:
        in_transaction(db, idempotent.save_record, db, path, record)


def main(argv=None) -> None:
    idempotent.complete = complete  # the rest of the design is the correct one
    idempotent.main(argv)


if __name__ == "__main__":
    main()
