"""A crawler whose duplicate window lies between a write and its next durable step (tests/test_after_points.py).

Each product's record is appended to a JSON-lines file and fsynced, and only then is the product's path appended
to a progress file (fsynced too), which the next start reads to skip the products it has. A kill after the
record's write and before the progress write makes the next start fetch that product again and store it twice:
the window a store write's after-point (`aw1`) reaches and its before-point (`w1`) does not. With `--redis URL`
the progress is a Redis set instead (a server the spec declares, jsonl_then_redis.toml): then the step after the
record's write is a command to that server, which only the record's after-point or a point of the declared
server (`w1:redis`) reaches. A plain program, as a user writes one; no killtest import.

    python3 jsonl_then_progress.py --base http://127.0.0.1:8000 --out records.jsonl --progress progress.txt
    python3 jsonl_then_progress.py --base http://127.0.0.1:8000 --out records.jsonl --redis redis://127.0.0.1:6379/0
"""
import argparse
import json
import os
import re
import urllib.request


def fetch(base, path):
    with urllib.request.urlopen(base + path, timeout=10) as response:
        return response.read().decode()


def field(html, name):
    found = re.search(f'class="{name}">([^<]+)<', html)
    return found.group(1) if found else None


def append_durably(path, line):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode() + b"\n")  # one write: a line is whole or not there
        os.fsync(fd)
    finally:
        os.close(fd)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--progress")
    parser.add_argument("--redis")
    args = parser.parse_args()
    if args.redis:
        import redis

        queue = redis.Redis.from_url(args.redis)
        done = {path.decode() for path in queue.smembers("done")}
        mark_done = lambda path: queue.sadd("done", path)  # noqa: E731
    else:
        done = set(open(args.progress).read().split()) if os.path.exists(args.progress) else set()
        mark_done = lambda path: append_durably(args.progress, path)  # noqa: E731
    listing = "/list/0"
    while listing:
        html = fetch(args.base, listing)
        for path in re.findall(r'href="(/product/\d+)"', html):
            if path in done:
                continue
            page = fetch(args.base, path)
            record = {"sku": field(page, "sku"), "price": field(page, "price"), "name": field(page, "name")}
            append_durably(args.out, json.dumps(record))  # the record first ...
            mark_done(path)  # ... and only then the progress: the duplicate window between
        following = re.search(r'class="next" href="(/list/\d+)"', html)
        listing = following.group(1) if following else None


if __name__ == "__main__":
    main()
