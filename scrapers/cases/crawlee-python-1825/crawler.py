"""A Crawlee for Python crawler of the fixture shop, as Crawlee's docs write one, on its file-system storage.

Run by killtest through design.toml with the case's pinned Crawlee (scrapers/cases/crawlee-python-1825/
case.toml). The request queue and the dataset live in CRAWLEE_STORAGE_DIR and are kept between starts
(CRAWLEE_PURGE_ON_START=false), which is how a Crawlee crawl resumes after it was killed; each record
is one JSON file of the default dataset. Nothing here is crash-safety of its own.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time

from crawlee import ConcurrencySettings
from crawlee.crawlers import ParselCrawler, ParselCrawlingContext


# With CRAWLER_LOG set (`killtest cases --report` sets it), the framework's log also goes to that file,
# record by record, under a line that opens each start: the report quotes the framework's own words.
if os.environ.get("CRAWLER_LOG"):
    with open(os.environ["CRAWLER_LOG"], "a", encoding="utf-8") as _opened:
        _opened.write(f"--- crawler started: pid {os.getpid()}, storage {os.getcwd()}\n")
    _kept = logging.FileHandler(os.environ["CRAWLER_LOG"], encoding="utf-8")
    _kept.setLevel(logging.INFO)
    _kept.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(_kept)


async def crawl(base: str) -> None:
    crawler = ParselCrawler(concurrency_settings=ConcurrencySettings(desired_concurrency=8, max_concurrency=8),
                            configure_logging=False)

    @crawler.router.default_handler
    async def listing(context: ParselCrawlingContext) -> None:
        await context.enqueue_links(selector="ul a", label="product")
        await context.enqueue_links(selector="a.next")

    @crawler.router.handler("product")
    async def product(context: ParselCrawlingContext) -> None:
        page = context.selector
        await context.push_data({"sku": page.css(".sku::text").get(), "price": page.css(".price::text").get(),
                                 "name": page.css(".name::text").get(), "scraped_at": time.time()})

    await crawler.run([base.rstrip("/") + "/list/0"])


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].startswith(("http://", "https://")):
        sys.exit("usage: crawler.py BASE_URL")
    asyncio.run(crawl(sys.argv[1]))
