"""A plain Scrapy spider for the bookshop at books.test (fixture_site/recordings/second_site.py), as written.

It knows nothing of killtest: it starts at the URL it is given, obeys robots.txt, follows the
catalogue's query-string pages and its relative and absolute book links, and yields one item per
book. killtest records it once against the live site, then kill-tests it, unchanged, against the
replay (examples/recorded-site/design.toml).
"""

from __future__ import annotations

import time

import scrapy


class BookshopSpider(scrapy.Spider):
    name = "bookshop"
    custom_settings = {
        "ROBOTSTXT_OBEY": True,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        "CONCURRENT_REQUESTS": 1,  # one page at a time: the order of a crawl, and so of its kills, repeats
    }

    def __init__(self, start: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start]

    def parse(self, response):
        for href in response.css("a::attr(href)").getall():
            if "catalogue" in href:
                yield response.follow(href, callback=self.parse_catalogue)

    def parse_catalogue(self, response):
        for href in response.css("a.book::attr(href)").getall():
            yield response.follow(href, callback=self.parse_book)
        next_page = response.css("a.next::attr(href)").get()
        if next_page is not None:
            yield response.follow(next_page, callback=self.parse_catalogue)

    def parse_book(self, response):
        yield {"upc": response.css(".upc::text").get(), "price": response.css(".price::text").get(),
               "title": response.css(".title::text").get(), "scraped_at": time.time()}
