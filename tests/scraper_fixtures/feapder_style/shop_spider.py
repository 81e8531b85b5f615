"""The shop's products, crawled as feapder's docs write a spider: its queue in Redis, its items in a JSON-lines file.

A `Spider` subclass with `start_requests` and a parser per page kind, and a custom pipeline as feapder's
docs on pipelines write one (`save_items` appends the batch, returns True). The framework is
minifeapder.py, feapder 1.9.3's shape; design.toml gives it a private Redis ([servers] redis) and reads
the file.
"""

from __future__ import annotations

import argparse
import json
import re
import time

from minifeapder import BasePipeline, Item, Request, Spider

PRODUCT_LINK = re.compile(r'href="(/product/\d+)"')
LISTING_LINK = re.compile(r'href="(/list/\d+)"')
FIELD = {name: re.compile(rf'class="{name}">([^<]+)<') for name in ("sku", "price", "name")}


class JsonLinesPipeline(BasePipeline):
    """Appends each batch of items to one file, a JSON object a line."""

    path = "items.jsonl"

    def save_items(self, table, items):
        with open(self.path, "a", encoding="utf-8") as out:
            out.write("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items))
        return True


class ShopSpider(Spider):
    base_url = "http://127.0.0.1:8000"

    def start_requests(self):
        yield Request(self.base_url + "/list/0")

    def parse(self, request, response):
        for path in PRODUCT_LINK.findall(response.text):
            yield Request(self.base_url + path, callback=self.parse_product)
        for path in LISTING_LINK.findall(response.text)[:1]:
            yield Request(self.base_url + path)

    def parse_product(self, request, response):
        item = Item({name: pattern.search(response.text).group(1) for name, pattern in FIELD.items()})
        item.table_name = "products"
        item["url"] = request.url
        item["scraped_at"] = time.time()
        yield item


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the shop's address")
    parser.add_argument("--redis", required=True, help="the Redis the requests are kept in (redis://...)")
    parser.add_argument("--out", required=True, help="the JSON-lines file the items are appended to")
    parser.add_argument("--lost-timeout", type=int, default=600,
                        help="REQUEST_LOST_TIMEOUT: seconds before a dead crawler's requests come back (600)")
    args = parser.parse_args()
    JsonLinesPipeline.path = args.out
    ShopSpider.base_url = args.base.rstrip("/")
    ShopSpider.__custom_setting__ = {"REDISDB_URL": args.redis, "ITEM_PIPELINES": [JsonLinesPipeline()],
                                     "REQUEST_LOST_TIMEOUT": args.lost_timeout}
    ShopSpider(redis_key="shop").start()


if __name__ == "__main__":
    main()
