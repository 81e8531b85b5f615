"""Zoo: record IDs that are not derived from the data. Every write of a product is a new row.

Within one crawl the durable frontier hides it; the next scheduled crawl of the same store stores
every product a second time.
"""

from __future__ import annotations

import uuid

from killtest.scrapers import idempotent


def record_id(sku: str) -> str:
    return uuid.uuid4().hex  # a fresh ID each time: the upsert never finds the row it should update


def main(argv=None) -> None:
    idempotent.record_id = record_id
    idempotent.main(argv)


if __name__ == "__main__":
    main()
