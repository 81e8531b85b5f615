"""The idempotent design's storage cost per page, without the network: its own functions on a real SQLite file.

The crawl is replayed as the design makes it: claim a path, then commit what its page gave (links
for a listing page, a record for a product page) in one transaction. Its time per page shows what
the frontier and the upsert cost as the catalog grows, apart from the site and the HTTP client.
"""

from __future__ import annotations

import os
import tempfile
import time


def frontier_seconds_per_page(products: int, per_page: int, work_dir: str | None = None) -> float:
    from killtest.scrapers import idempotent  # the design under test, imported only by this benchmark

    with tempfile.TemporaryDirectory(prefix="killtest-frontier-", dir=work_dir) as directory:
        db = idempotent.open_store(os.path.join(directory, "frontier.sqlite"))
        try:
            idempotent.discover(db, 1, ["/list/0"])
            pages, began = 0, time.perf_counter()
            while (path := idempotent.claim(db, 1, 60.0)) is not None:
                number = int(path.rsplit("/", 1)[1])
                if path.startswith("/list/"):
                    links = [f"/product/{i}" for i in range(number * per_page, min(products, (number + 1) * per_page))]
                    links += [f"/list/{number + 1}"] if (number + 1) * per_page < products else []
                    idempotent.complete(db, 1, path, discovered=links)
                else:
                    idempotent.complete(db, 1, path, record={"sku": f"SKU-{number}", "price": "1.00",
                                                             "name": f"Product {number}"})
                pages += 1
            return (time.perf_counter() - began) / pages
        finally:
            db.close()
