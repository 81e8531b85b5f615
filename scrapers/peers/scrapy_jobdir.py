"""A plain Scrapy spider for the fixture site, resumable the way Scrapy documents it: `-s JOBDIR=DIR`.

Run by killtest through scrapers/peers/scrapy-jobdir.toml as
`python -m scrapy runspider scrapy_jobdir.py -a base=URL -s JOBDIR=DIR -o items.jsonl:jsonlines`.
It is written as a Scrapy user would write it, with no crash-safety of its own: what survives a
kill is whatever Scrapy's job directory and feed exporter keep.
"""

from __future__ import annotations

import time

import scrapy


class FixtureShopSpider(scrapy.Spider):
    name = "fixture-shop"
    custom_settings = {
        "ROBOTSTXT_OBEY": False,  # the shop's pages only: robots.txt would be one more request a start
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
