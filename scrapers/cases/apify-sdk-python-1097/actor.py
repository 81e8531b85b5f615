"""A Scrapy spider of the fixture shop run as an Apify Actor, locally, the way the SDK's Scrapy guide runs one.

Run by killtest through design.toml as `python actor.py BASE_URL`. The guide's project layout
(`__main__.py` calling `run_scrapy_actor(main())`, `main.py` with `async with Actor:` and
`apply_apify_settings`, a spider) is folded into this one file. Without the Apify platform the Actor
keeps its request queue and dataset on disk under APIFY_LOCAL_STORAGE_DIR; APIFY_PURGE_ON_START=false
keeps them between starts, so a restarted Actor resumes from its request queue. Nothing here is
crash-safety of its own: what survives a kill is what the SDK's ApifyScheduler and
ActorDatasetPushPipeline keep.
"""

from __future__ import annotations

import logging
import os
import sys
import time

from apify import Actor
from apify.scrapy import apply_apify_settings, run_scrapy_actor
from scrapy import Spider
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.settings import Settings


# With CRAWLER_LOG set (`killtest cases --report` sets it), the framework's log also goes to that file,
# record by record, under a line that opens each start: the report quotes the framework's own words.
if os.environ.get("CRAWLER_LOG"):
    with open(os.environ["CRAWLER_LOG"], "a", encoding="utf-8") as _opened:
        _opened.write(f"--- crawler started: pid {os.getpid()}, storage {os.getcwd()}\n")
    _kept = logging.FileHandler(os.environ["CRAWLER_LOG"], encoding="utf-8")
    _kept.setLevel(logging.INFO)
    _kept.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(_kept)


class ShopSpider(Spider):
    name = "fixture-shop"

    def __init__(self, base: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.start_urls = [base.rstrip("/") + "/list/0"]

    def parse(self, response):
        for href in response.css("ul a::attr(href)").getall():
            yield response.follow(href, callback=self.parse_product)
        next_page = response.css("a.next::attr(href)").get()
        if next_page is not None:
            yield response.follow(next_page, callback=self.parse)

    def parse_product(self, response):
        yield {"sku": response.css(".sku::text").get(), "price": response.css(".price::text").get(),
               "name": response.css(".name::text").get(), "scraped_at": time.time()}


async def main(base: str) -> None:
    async with Actor:
        settings = Settings({
            "ROBOTSTXT_OBEY": False,  # the shop's pages only: robots.txt would be one more request a start
            "TELNETCONSOLE_ENABLED": False,  # no listening port of its own
            "LOG_LEVEL": "WARNING",
            "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        })
        # The SDK's components: ApifyScheduler (the request queue) and ActorDatasetPushPipeline (the dataset).
        settings = apply_apify_settings(settings=settings)
        await AsyncCrawlerRunner(settings).crawl(ShopSpider, base=base)


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].startswith(("http://", "https://")):
        sys.exit("usage: actor.py BASE_URL")
    run_scrapy_actor(main(sys.argv[1]))
