"""Zoo: an insert that ignores a record it already has, so a changed price is never stored.

Idempotent in the narrowest sense (one row per product, whatever the kills), and wrong as soon as
the site changes: a re-crawl fetches the new price and throws it away.
"""

from __future__ import annotations

from killtest.scrapers import idempotent

# The correct upsert's INSERT, with "do nothing" where it should update changed content.
INSERT_ONCE = idempotent.UPSERT_RECORD.split(" ON CONFLICT")[0] + " ON CONFLICT (record_id) DO NOTHING"


def save_record(db, path, record) -> None:
    db.execute(INSERT_ONCE, idempotent.record_row(path, record))


def main(argv=None) -> None:
    idempotent.save_record = save_record
    idempotent.main(argv)


if __name__ == "__main__":
    main()
