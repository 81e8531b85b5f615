"""Zoo: an upsert that rewrites unchanged records, so last_changed says a product changed when it did not.

The rows stay right and one per product; only a re-crawl shows that every record was "changed".
"""

from __future__ import annotations

import hashlib
import json
import time

from scrapers import idempotent


def save_record(db, path, record) -> None:
    payload = json.dumps(record, sort_keys=True)
    now = time.time()
    db.execute(  # no "WHERE the content changed": every write moves last_changed
        "INSERT INTO records (record_id, path, content_hash, data, first_seen, last_changed)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (record_id) DO UPDATE SET data = excluded.data,"
        " content_hash = excluded.content_hash, last_changed = excluded.last_changed",
        (idempotent.record_id(record["sku"]), path, hashlib.sha256(payload.encode()).hexdigest(), payload, now, now))


def main(argv=None) -> None:
    idempotent.save_record = save_record
    idempotent.main(argv)


if __name__ == "__main__":
    main()
