"""Zoo: progress committed before the result, on PostgreSQL. The page is marked done in one transaction,
the record saved in the next.

A kill between the two commits loses the record for good: the frontier says the page is done, so no
later start fetches it again. The rest is the correct design (killtest.scrapers.idempotent_pg). Plugged
in as a `command` design (scrapers/zoo/done_before_record_pg.toml), only its store writes (`w<n>`, the
statements its proxy counts) reach the gap between the two commits.
"""

from __future__ import annotations

from killtest.scrapers import idempotent_pg


def complete(db, crawl, path, discovered=(), record=None) -> None:
    with db.transaction():
        idempotent_pg.discover(db, crawl, list(discovered))
        idempotent_pg.mark_done(db, crawl, path)
    if record is not None:
        with db.transaction():
            idempotent_pg.save_record(db, path, record)


def main(argv=None) -> None:
    idempotent_pg.complete = complete  # the rest of the design is the correct one
    idempotent_pg.main(argv)


if __name__ == "__main__":
    main()
