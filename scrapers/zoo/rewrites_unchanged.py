"""Zoo: an upsert that rewrites unchanged records, so last_changed says a product changed when it did not.

The rows stay right and one per product; only a re-crawl shows that every record was "changed".
"""

from __future__ import annotations

from killtest.scrapers import idempotent

# The correct upsert without its last clause, "WHERE the content changed": every write moves last_changed.
UPSERT_ALWAYS = idempotent.UPSERT_RECORD.split(" WHERE records.content_hash")[0]


def save_record(db, path, record) -> None:
    db.execute(UPSERT_ALWAYS, idempotent.record_row(path, record))


def main(argv=None) -> None:
    idempotent.save_record = save_record
    idempotent.main(argv)


if __name__ == "__main__":
    main()
