"""Firecrawl's queue design (seeds/002) on Redis with BullMQ's Python port.

A crawl is split into one job per URL on a BullMQ queue. A worker fetches its page; a listing's
links are scheduled once each, with a Redis set as the lock: SADD returns 1 only to the first
discoverer, which then adds the URL's job. A discoverer killed between the two would leave a URL
in the set and on no queue; so a job run again after a stall adds all its links, and BullMQ
ignores the ones whose job ID (the URL) it already has (`--trust-the-set` turns that off, to show
the loss: killtest finds it). Records are upserted in a Redis hash by an ID derived
from the data. A job whose worker was killed stays "active" until its lock runs out and a live
worker's stalled-job check moves it back to waiting: the lock settings decide how long a crawl
stalls after a redeploy, which is the article's incident. They are this program's options.

One start is one worker process; it exits when no job of its crawl waits, runs or is delayed.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import signal
import sys
import time

import redis.asyncio as aioredis
import requests
from bullmq import Queue, Worker

from killtest.scrapers.common import FIRST_PAGE, LISTING_LINK, PRODUCT_LINK, emit, fetch_page, parse_product
from killtest.scrapers.idempotent import record_id

RECORDS = "records"  # hash: record ID -> the record as JSON
# One script, so atomic: the record (first_seen kept; data and last_changed rewritten only when the
# content changed) and the page's "done" mark for its crawl. BullMQ completes the job in a script
# of its own, so a kill between the two leaves a finished page whose job runs again: the done set
# lets that run skip the fetch, as the SQLite design's frontier does. Fenced, as Firecrawl's queue fences
# its commit: only while the job's BullMQ lock (KEYS[3]) still holds this worker's token (ARGV[5]); a
# worker woken past its lock, whose job another worker has taken, writes nothing (-1).
UPSERT_AND_MARK_DONE = """
if redis.call('GET', KEYS[3]) ~= ARGV[5] then return -1 end
redis.call('SADD', KEYS[2], ARGV[4])
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  local record = cjson.decode(old)
  if record['content_hash'] == ARGV[2] then return 0 end
  local new = cjson.decode(ARGV[3])
  new['first_seen'] = record['first_seen']
  redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(new))
  return 1
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""


def queue_name(crawl: int) -> str:
    return f"scrape-{crawl}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="queue-bullmq", description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the site's base URL")
    parser.add_argument("--redis", required=True, help="the Redis server, redis://host:port/db")
    parser.add_argument("--crawl", type=int, default=1, help="which crawl this is (default 1)")
    parser.add_argument("--lock-ms", type=int, default=30_000, help="BullMQ lockDuration (default 30000)")
    parser.add_argument("--renew-ms", type=int, default=None, help="BullMQ lockRenewTime (default: lock / 2)")
    parser.add_argument("--stalled-ms", type=int, default=30_000, help="BullMQ stalledInterval (default 30000)")
    parser.add_argument("--max-stalled", type=int, default=1, help="BullMQ maxStalledCount (default 1)")
    parser.add_argument("--trust-the-set", action="store_true",
                        help="schedule a link only when SADD says it is new, even in a job run again after a stall")
    args = parser.parse_args(argv)
    if not args.redis.startswith("redis://"):
        print(f"error: --redis must be a redis:// URL, not {args.redis!r}", file=sys.stderr)
        raise SystemExit(2)
    return args


async def schedule(client: aioredis.Redis, queue: Queue, crawl: int, paths: list[str], again: bool = False) -> None:
    """Add each path's job once: the set says who discovered it first; `again` adds them all regardless."""
    for path in paths:
        first = await client.sadd(f"crawl:{crawl}:visited", path)
        if first or again:
            await queue.add("scrape", {"path": path}, {"jobId": path, "removeOnComplete": False})


def done_key(crawl: int) -> str:
    return f"crawl:{crawl}:done"


async def save_record(client: aioredis.Redis, crawl: int, path: str, record: dict, token: str) -> None:
    content_hash = hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()
    now = time.time()
    stored = {**record, "path": path, "content_hash": content_hash, "first_seen": now, "last_changed": now}
    lock = f"bull:{queue_name(crawl)}:{path}:lock"  # BullMQ's own lock key of the job (its id is the path)
    if await client.eval(UPSERT_AND_MARK_DONE, 3, RECORDS, done_key(crawl), lock, record_id(record["sku"]),
                         content_hash, json.dumps(stored), path, token) == -1:
        emit("lease_lost", path=path)  # BullMQ will refuse to complete the job too ("Missing lock")


async def crawl_site(args: argparse.Namespace) -> None:
    connection = {"connection": args.redis}
    client = aioredis.from_url(args.redis)
    queue = Queue(queue_name(args.crawl), connection)
    session = requests.Session()

    async def process(job, token):
        path = job.data["path"]
        if await client.sismember(done_key(args.crawl), path):
            return  # stored by a worker killed before BullMQ marked the job complete
        # In a thread, so that BullMQ keeps renewing the job's lock while the page downloads.
        html = await asyncio.to_thread(fetch_page, session, args.base + path, path)
        if path.startswith("/list/"):
            # attemptsStarted counts every move to active: above 1, a killed worker began this job before.
            again = job.attemptsStarted > 1 and not args.trust_the_set
            await schedule(client, queue, args.crawl, PRODUCT_LINK.findall(html) + LISTING_LINK.findall(html), again)
            await client.sadd(done_key(args.crawl), path)
        else:
            await save_record(client, args.crawl, path, parse_product(html), token)

    options = {**connection, "lockDuration": args.lock_ms, "stalledInterval": args.stalled_ms,
               "maxStalledCount": args.max_stalled, "drainDelay": 1}
    if args.renew_ms is not None:
        options["lockRenewTime"] = args.renew_ms
    worker = Worker(queue_name(args.crawl), process, options)
    # A redeploy sends SIGTERM: take no new job, let the running one finish, then exit. A platform
    # whose grace period is shorter SIGKILLs the worker first, and the job is left locked.
    redeployed = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, redeployed.set)
    await schedule(client, queue, args.crawl, [FIRST_PAGE], again=not args.trust_the_set)
    emit("ready")
    try:
        while not redeployed.is_set():  # done when no job of this crawl waits, runs or is delayed
            await asyncio.sleep(0.05)
            counts = await queue.getJobCounts("waiting", "active", "delayed", "prioritized", "paused")
            if not any(counts.values()):
                break
        if redeployed.is_set():
            emit("draining")
        failed = await queue.getJobCounts("failed")
        if failed.get("failed"):
            emit("jobs_failed", count=failed["failed"])
    finally:
        await worker.close()
        await queue.close()
        await client.aclose()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    asyncio.run(crawl_site(args))
    emit("finished")


if __name__ == "__main__":
    main()
