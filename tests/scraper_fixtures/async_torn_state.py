"""An asyncio crawler in crawl4ai's crash-recovery shape (tests/test_crash_lines.py): its progress is a JSON state
file it rewrites in place after each record (crawl4ai's `on_state_change`), read back at the next start (its
`resume_state`), all inside coroutines run by `asyncio.run(main())`. The rewrite truncates the file, logs a line to
its own log file, and only then writes the new state: a kill at the log's write or at the state's write leaves the
state empty or torn, and the next start crashes in `json.load`. One bug, whichever of the two writes the kill
landed before. A plain program, as a user writes one; no killtest import.

    python3 async_torn_state.py --base http://127.0.0.1:8000 --out records.jsonl --state state.json --log crawl.log
"""
import argparse
import asyncio
import json
import os
import re
import sys
import urllib.request


def fetch(base, path):
    with urllib.request.urlopen(base + path, timeout=10) as response:
        return response.read().decode()


def field(html, name):
    found = re.search(f'class="{name}">([^<]+)<', html)
    return found.group(1) if found else None


async def log(path, line):
    with open(path, "a") as out:
        out.write(line + "\n")
        out.flush()  # the log's write


async def resume_state(path):
    if not os.path.exists(path):
        return {"done": []}
    with open(path) as state:
        return json.load(state)  # a torn state file fails here


async def on_state_change(path, state, log_path):
    with open(path, "w") as out:  # truncated: empty until the write below
        await log(log_path, f"saving state: {len(state['done'])} done")
        out.write(json.dumps(state))
        out.flush()  # the state's write


async def crawl(args):
    state = await resume_state(args.state)
    done = set(state["done"])
    listing = "/list/0"
    while listing:
        html = fetch(args.base, listing)
        for path in re.findall(r'href="(/product/\d+)"', html):
            if path in done:
                continue
            page = fetch(args.base, path)
            record = {"sku": field(page, "sku"), "price": field(page, "price"), "name": field(page, "name")}
            with open(args.out, "a") as out:
                out.write(json.dumps(record) + "\n")
            done.add(path)
            await on_state_change(args.state, {"done": sorted(done)}, args.log)
        following = re.search(r'class="next" href="(/list/\d+)"', html)
        listing = following.group(1) if following else None
    return 0


async def main():
    parser = argparse.ArgumentParser()
    for name in ("--base", "--out", "--state", "--log"):
        parser.add_argument(name, required=True)
    return await crawl(parser.parse_args())


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
