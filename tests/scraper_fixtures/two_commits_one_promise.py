"""Two bugs at two lines that break the same promise the same way (issue 35's review): a plain Python program,
no killtest import, plugged in as a command. Product records are JSON files, each written whole and renamed into
place; progress is a SQLite database. The first listing page's products go through an older path than the
others, and both paths make the same mistake at a line of their own: the record file is in place before the
page's done mark is committed, in its own commit. A kill anywhere inside either commit (the same calls on the
same journal) makes the next start fetch the page again and write a second file: two lines, one promise.

    python3 two_commits_one_promise.py --base http://127.0.0.1:8000 --out dataset
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


def save_from_first_page(db, folder, path, record):
    write_whole(folder, record)
    db.execute("INSERT INTO done (path) VALUES (?)", (path,))  # FIRST COMMIT: after the record, on its own


def write_whole(folder, record):
    number = len(os.listdir(folder)) + 1
    temporary = os.path.join(os.path.dirname(folder), "record.tmp")  # outside the dataset: no torn record
    with open(temporary, "w") as out:
        out.write(json.dumps(record))
    os.replace(temporary, os.path.join(folder, f"{number:06d}.json"))


def save(db, folder, path, record):
    write_whole(folder, record)
    db.execute("INSERT INTO done (path) VALUES (?)", (path,))  # SECOND COMMIT: the same mistake, another line


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
            (save_from_first_page if listing == "/list/0" else save)(db, args.out, path, record)
        following = re.search(r'class="next" href="(/list/\d+)"', html)
        listing = following.group(1) if following else None


if __name__ == "__main__":
    main()
