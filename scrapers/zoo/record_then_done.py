"""Zoo: the result committed before the progress, in a separate transaction.

No record is lost, but a crash between the two commits leaves a page whose record is stored and
whose URL is not done: the next start fetches it again. With derived IDs the second write is
harmless; with anything that counts or notifies per fetch it is not. killtest reports the refetch.
"""

from __future__ import annotations

from killtest.scrapers import idempotent
from killtest.scrapers.zoo.transactions import in_transaction, mark_page_done


def complete(db, crawl, path, discovered=(), record=None) -> None:
    if record is not None:
        in_transaction(db, idempotent.save_record, db, path, record)
    in_transaction(db, mark_page_done, db, crawl, path, discovered)


def main(argv=None) -> None:
    idempotent.complete = complete
    idempotent.main(argv)


if __name__ == "__main__":
    main()
