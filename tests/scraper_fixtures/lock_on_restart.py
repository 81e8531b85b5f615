"""A crawler that holds a lock while it crawls and, started again, waits out a lock its dead predecessor left
until the lock's timeout: feapder's REQUEST_LOST_TIMEOUT in a few lines (issue 43). Restarted at once after a
kill, it waits nearly the whole timeout, saying so; restarted after a supervisor's delay at least as long as the
timeout, it finds the lock expired and crawls at once. It resumes from its own store (a product already in it
is not stored again), one line a product.

    python3 lock_on_restart.py --base http://127.0.0.1:8000 --out records.jsonl --lock-timeout 30
"""
import argparse
import json
import os
import re
import sys
import time
import urllib.request


def fetch(base, path):
    with urllib.request.urlopen(base + path, timeout=10) as response:
        return response.read().decode()


def field(html, name):
    found = re.search(f'class="{name}">([^<]+)<', html)
    return found.group(1) if found else None


def stored_paths(path):
    if not os.path.exists(path):
        return set()
    with open(path, encoding="utf-8") as lines:
        return {json.loads(line)["path"] for line in lines if line.strip()}


def wait_out_the_lock(lock, timeout_s):
    """A lock younger than its timeout was left by a start that may still be alive: wait until it expires.
    The lock holds the wall-clock time it was taken at (a monotonic clock does not survive a process)."""
    try:
        with open(lock, encoding="utf-8") as held:
            taken_at = float(held.read())
    except (OSError, ValueError):
        return
    left = taken_at + timeout_s - time.time()
    if left > 0:
        print(f"the lock was taken {timeout_s - left:.1f}s ago by another start: waiting {left:.1f}s for it to"
              " expire", file=sys.stderr, flush=True)
        time.sleep(left)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--lock-timeout", type=float, required=True)
    args = parser.parse_args()
    lock = args.out + ".lock"
    wait_out_the_lock(lock, args.lock_timeout)
    with open(lock, "w", encoding="utf-8") as taken:
        taken.write(repr(time.time()))
    done = stored_paths(args.out)
    listing = "/list/0"
    while listing:
        html = fetch(args.base, listing)
        for path in re.findall(r'href="(/product/\d+)"', html):
            if path in done:
                continue
            page = fetch(args.base, path)
            with open(args.out, "a", encoding="utf-8") as out:
                out.write(json.dumps({"sku": field(page, "sku"), "price": field(page, "price"), "path": path}) + "\n")
            done.add(path)
        following = re.search(r'class="next" href="(/list/\d+)"', html)
        listing = following.group(1) if following else None
    os.remove(lock)


if __name__ == "__main__":
    main()
