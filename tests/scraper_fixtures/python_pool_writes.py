"""A crawler that keeps its storage as Crawlee for Python does: every file written atomically (a temporary file with
a random name, then a rename over the real one) on a thread of asyncio's default pool (`asyncio.to_thread`), a
request-queue file per product page and a dataset file per record, several products at once.

Its mistake, for explore to find: it marks a product handled in its queue before it writes the product's record,
and a start skips handled products; killed between the two, the record is lost.

    python python_pool_writes.py BASE_URL STORAGE_DIR
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import tempfile
import urllib.request


def atomic_write(path: str, data: dict) -> None:
    folder, name = os.path.split(path)
    handle, temporary = tempfile.mkstemp(prefix=name + ".", suffix=".tmp", dir=folder)
    with os.fdopen(handle, "w") as out:
        json.dump(data, out)
    os.replace(temporary, path)


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.read().decode()


async def product(base: str, storage: str, page: str) -> None:
    queued = os.path.join(storage, "queue", page.strip("/").replace("/", "_") + ".json")
    if os.path.exists(queued) and json.load(open(queued))["handled"]:
        return  # handled on an earlier start
    html = await asyncio.to_thread(fetch, base + page)
    sku = re.search(r'class="sku">([^<]+)', html)[1]
    record = {"sku": sku, "price": re.search(r'class="price">([^<]+)', html)[1],
              "name": re.search(r'class="name">([^<]+)', html)[1]}
    await asyncio.to_thread(atomic_write, queued, {"url": page, "handled": True})  # the mistake: before the record
    await asyncio.to_thread(atomic_write, os.path.join(storage, "datasets", sku + ".json"), record)


async def main(base: str, storage: str) -> None:
    for folder in ("queue", "datasets"):
        os.makedirs(os.path.join(storage, folder), exist_ok=True)
    listing: str | None = "/list/0"
    while listing:
        html = await asyncio.to_thread(fetch, base + listing)
        pages = re.findall(r'href="(/product/\d+)"', html)
        await asyncio.gather(*(product(base, storage, page) for page in pages))
        following = re.search(r'class="next" href="([^"]+)"', html)
        listing = following[1] if following else None


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
