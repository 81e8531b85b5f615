"""A Playwright for Python scraper of the shop, as a new user writes one, with Debian's Chromium.

It resumes from its own output: products already in the JSON-lines file are not fetched again; the
listing pages are, on every start. Playwright drives its browser over a pipe.

    python scraper.py --base http://127.0.0.1:8000 --out records.jsonl
"""

import argparse
import json
import os
import time

from playwright.sync_api import sync_playwright

parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()

stored = set()
if os.path.exists(args.out):
    with open(args.out, encoding="utf-8") as lines:
        for line in lines:
            try:
                stored.add(json.loads(line)["path"])
            except (ValueError, KeyError):
                pass  # a line torn by a kill

with sync_playwright() as playwright:
    # --no-sandbox: Chromium refuses to run as root with its sandbox (CI runs as root).
    browser = playwright.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
                                         args=["--no-sandbox"])
    page = browser.new_page()
    listing = "/list/0"
    while listing:
        page.goto(args.base + listing)
        products = [a.get_attribute("href") for a in page.query_selector_all("li a")]
        following = [a.get_attribute("href") for a in page.query_selector_all("a.next")]
        for path in products:
            if path in stored:
                continue
            page.goto(args.base + path)
            record = {"path": path, "sku": page.text_content(".sku"), "price": page.text_content(".price"),
                      "name": page.text_content(".name"), "scraped_at": time.time()}
            with open(args.out, "a", encoding="utf-8") as out:
                out.write(json.dumps(record) + "\n")
            stored.add(path)
        listing = following[0] if following else None
    browser.close()
