"""A plain Scrapy spider for the fixture site, resumable the way Scrapy documents it: `-s JOBDIR=DIR`.

Run by killtest through the design.toml beside it (a copy of scrapers/peers/scrapy_jobdir.py, so the case
folder stands alone) as
`python -m scrapy runspider spider.py -a base=URL -s JOBDIR=DIR -o items.jsonl:jsonlines`.
It is written as a Scrapy user would write it, with no crash-safety of its own: what survives a
kill is whatever Scrapy's job directory and feed exporter keep.
"""

from __future__ import annotations

import logging
import os
import time

import scrapy


# With CRAWLER_LOG set (`killtest cases --report` sets it), the framework's log also goes to that file,
# record by record, under a line that opens each start: the report quotes the framework's own words.
if os.environ.get("CRAWLER_LOG"):
    with open(os.environ["CRAWLER_LOG"], "a", encoding="utf-8") as _opened:
        _opened.write(f"--- crawler started: pid {os.getpid()}, storage {os.getcwd()}\n")
    _kept = logging.FileHandler(os.environ["CRAWLER_LOG"], encoding="utf-8")
    _kept.setLevel(logging.INFO)
    _kept.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(_kept)


class FixtureShopSpider(scrapy.Spider):
    name = "fixture-shop"
    custom_settings = {
        "ROBOTSTXT_OBEY": False,  # a crawl of the shop's pages only: robots.txt would be one more request a start
        "TELNETCONSOLE_ENABLED": False,  # no listening port of its own
        "LOG_LEVEL": "WARNING",
    }

    def __init__(self, base: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        if not base.startswith(("http://", "https://")):
            raise ValueError(f"-a base= must be an http:// or https:// URL, not {base!r}")
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
