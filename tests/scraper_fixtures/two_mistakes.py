"""A user's scraper with two mistakes, for the triage tests (issue 24): a plain Python program, no killtest
import, plugged in as a `command`. It resumes from done.txt, the product pages it has scraped.

1. No unique key: rows are appended, the file flushed two rows at a time; a kill after a flush and before
   the page is marked done makes the next start fetch the page again and write its row twice.
2. Done before the record is committed: done.txt is line-buffered, so the page is marked done while its
   row may still sit in the records buffer; a kill between the two loses the record.

It also fetches the listing pages again on every start (more requests than a full crawl plus one a kill).

    python3 two_mistakes.py --base http://127.0.0.1:8000 --out records.jsonl
"""
import argparse
import json
import os
import re
import time
import urllib.request


def fetch(base, path):
    with urllib.request.urlopen(base + path, timeout=10) as response:
        return response.read().decode()


def field(html, name):
    found = re.search(f'class="{name}">([^<]+)<', html)
    return found.group(1) if found else None


def mark_done(progress, path):
    progress.write(path + "\n")  # line-buffered: on disk at once


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    done_path = os.path.join(os.path.dirname(args.out), "done.txt")
    done = set(open(done_path).read().split()) if os.path.exists(done_path) else set()
    records = open(args.out, "a")  # rows are appended: no unique key
    progress = open(done_path, "a", buffering=1)
    scraped = 0
    listing = "/list/0"
    while listing:
        html = fetch(args.base, listing)
        for path in re.findall(r'href="(/product/\d+)"', html):
            if path in done:
                continue
            page = fetch(args.base, path)
            record = {"sku": field(page, "sku"), "price": field(page, "price"), "name": field(page, "name"),
                      "scraped_at": time.time()}
            records.write(json.dumps(record) + "\n")
            scraped += 1
            if scraped % 2 == 0:
                records.flush()  # two rows at a time
            mark_done(progress, path)  # the page is done: its row may still be in the buffer
        following = re.search(r'class="next" href="(/list/\d+)"', html)
        listing = following.group(1) if following else None
    records.close()
    progress.close()


if __name__ == "__main__":
    main()
