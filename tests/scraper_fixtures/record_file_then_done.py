"""Issue 35's design, as a new user writes it (a plain program, no killtest import, plugged in as a command):
product records as JSON files, one a product, and its progress in SQLite. Two mistakes, on purpose:

1. The record file is written before the page is marked done, and the done mark is its own SQLite commit:
   a kill anywhere inside that commit makes the next start fetch the page again and write a second file.
2. A record file is written in place, in two writes: a kill between them leaves a torn file.

    python3 record_file_then_done.py --base http://127.0.0.1:8000 --out dataset
"""
import argparse
import json
import os
import re
import sqlite3
import urllib.request


def fetch(base, path):
    with urllib.request.urlopen(base + path, timeout=10) as response:
        return response.read().decode()


def field(html, name):
    found = re.search(f'class="{name}">([^<]+)<', html)
    return found.group(1) if found else None


def write_record(folder, record):
    number = len(os.listdir(folder)) + 1
    text = json.dumps(record)
    with open(os.path.join(folder, f"{number:06d}.json"), "w") as out:
        out.write(text[:20])
        out.flush()
        out.write(text[20:])


def mark_done(db, path):
    db.execute("INSERT INTO done (path) VALUES (?)", (path,))  # its own commit: the connection autocommits


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    db = sqlite3.connect(os.path.join(os.path.dirname(args.out), "progress.sqlite"), isolation_level=None)
    db.execute("CREATE TABLE IF NOT EXISTS done (path TEXT PRIMARY KEY)")
    done = {row[0] for row in db.execute("SELECT path FROM done")}
    listing = "/list/0"
    while listing:
        html = fetch(args.base, listing)
        for path in re.findall(r'href="(/product/\d+)"', html):
            if path in done:
                continue
            page = fetch(args.base, path)
            record = {"sku": field(page, "sku"), "price": field(page, "price"), "name": field(page, "name")}
            write_record(args.out, record)
            mark_done(db, path)
        following = re.search(r'class="next" href="(/list/\d+)"', html)
        listing = following.group(1) if following else None


if __name__ == "__main__":
    main()
