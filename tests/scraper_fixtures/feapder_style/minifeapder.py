"""A crawler framework in feapder 1.9.3's shape (`feapder.Spider`), small enough to read in one sitting.

feapder itself is not vendored: this is its design, read in its source (core/scheduler.py, core/collector.py,
core/parser_control.py, buffer/item_buffer.py, buffer/request_buffer.py, db/redisdb.py) and rebuilt with its
names and its settings, so a crawler written as feapder's docs write one (shop_spider.py) runs on it:

- the requests live in a Redis sorted set `{redis_key}:z_requests`, scored by priority (300);
- a collector takes up to COLLECTOR_TASK_COUNT requests whose score is due and, in one Lua script, scores
  them `now + REQUEST_LOST_TIMEOUT`: a lease, so a dead crawler's requests come back by themselves;
- a start within 10 s of the last heartbeat (`{redis_key}:h_spider_status`, every 5 s) takes the leased
  requests back at once (`reset_task`); a later start waits the leases out (600 s by default);
- the parser's new requests go through a request buffer, flushed every second: the new requests added
  (ZADD), then the requests that yielded only requests removed (ZREM);
- its items go through an item buffer, flushed every ITEM_UPLOAD_INTERVAL (1 s) or once
  ITEM_UPLOAD_BATCH_MAX_SIZE items wait, to the pipelines' `save_items`, and only then are the requests that
  yielded them removed from Redis: feapder's "data-loss prevention". A kill between the save and the ZREM
  saves the whole batch again on the next start (the duplicate window); nothing is lost.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from collections.abc import Iterable

import redis
import requests

# feapder's setting.py, the values that shape a crash (its defaults, but the item batch: 1000 there).
setting = {
    "REDISDB_URL": "redis://127.0.0.1:6379/0",
    "ITEM_PIPELINES": [],
    "COLLECTOR_TASK_COUNT": 32,
    "REQUEST_LOST_TIMEOUT": 600,
    "ITEM_UPLOAD_INTERVAL": 1.0,
    "ITEM_UPLOAD_BATCH_MAX_SIZE": 20,
    "SPIDER_MAX_RETRY_TIMES": 10,
}
HEARTBEAT_INTERVAL_S = 5
# What one collector call does, atomically (feapder's RedisDB.zrangebyscore_set_score).
TAKE_AND_RESCORE = """
local datas = redis.call('zrangebyscore', KEYS[1], ARGV[1], ARGV[2], 'limit', 0, ARGV[4])
for i = 1, #datas do redis.call('zadd', KEYS[1], ARGV[3], datas[i]) end
return datas
"""


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} | feapder | {message}", file=sys.stderr, flush=True)


class Request:
    """A page to fetch and the parser method for its response; kept in Redis as its JSON."""

    def __init__(self, url: str, callback: str = "parse", priority: int = 300, retry_times: int = 0) -> None:
        self.url, self.callback, self.priority, self.retry_times = url, callback, priority, retry_times
        if callable(callback):
            self.callback = callback.__name__

    def to_redis(self) -> str:
        return json.dumps({"url": self.url, "callback": self.callback, "retry_times": self.retry_times},
                          sort_keys=True)

    @classmethod
    def from_redis(cls, text: str) -> Request:
        return cls(**json.loads(text))


class Item(dict):
    """A record for the pipelines; `table_name` says where it goes."""

    table_name = "items"


class BasePipeline:
    """feapder.pipelines.BasePipeline: `save_items` returns True once the items are saved."""

    def save_items(self, table: str, items: list[dict]) -> bool:
        raise NotImplementedError


class _Done:
    """An item-buffer entry: the request whose items precede it, removed once they are saved."""

    def __init__(self, request_redis: str) -> None:
        self.request_redis = request_redis


class RequestBuffer(threading.Thread):
    def __init__(self, db: redis.Redis, table: str) -> None:
        super().__init__(daemon=True)
        self._db, self._table = db, table
        self._lock = threading.Lock()
        self._requests: list[Request] = []
        self._del_requests: list[str] = []

    def put_request(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)

    def put_del_request(self, request_redis: str) -> None:
        with self._lock:
            self._del_requests.append(request_redis)

    def run(self) -> None:
        while True:
            self.flush()
            time.sleep(1)

    def flush(self) -> None:
        with self._lock:
            if self._requests:
                self._db.zadd(self._table, {r.to_redis(): r.priority for r in self._requests})
                self._requests = []
            if self._del_requests:
                self._db.zrem(self._table, *self._del_requests)
                self._del_requests = []

    def count(self) -> int:
        with self._lock:
            return len(self._requests) + len(self._del_requests)


class ItemBuffer(threading.Thread):
    def __init__(self, db: redis.Redis, table: str, pipelines: list[BasePipeline]) -> None:
        super().__init__(daemon=True)
        self._db, self._table, self._pipelines = db, table, pipelines
        self._items: queue.Queue = queue.Queue()
        self._full = threading.Event()
        self._adding = threading.Lock()

    def put_item(self, item: Item | _Done) -> None:
        self._items.put(item)
        if self._items.qsize() >= setting["ITEM_UPLOAD_BATCH_MAX_SIZE"]:
            self._full.set()

    def run(self) -> None:
        while True:
            self._full.wait(setting["ITEM_UPLOAD_INTERVAL"])
            self._full.clear()
            self.flush()

    def flush(self) -> None:
        with self._adding:
            batch: list[Item | _Done] = []
            while not self._items.empty():
                batch.append(self._items.get_nowait())
                if len(batch) >= setting["ITEM_UPLOAD_BATCH_MAX_SIZE"]:
                    self._add_item_to_db(batch)
                    batch = []
            if batch:
                self._add_item_to_db(batch)

    def _add_item_to_db(self, batch: list[Item | _Done]) -> None:
        tables: dict[str, list[dict]] = {}
        for entry in batch:
            if isinstance(entry, Item):
                tables.setdefault(entry.table_name, []).append(dict(entry))
        for table, datas in tables.items():
            for pipeline in self._pipelines:
                if not pipeline.save_items(table, datas):
                    log(f"export to {table} failed; the requests stay in Redis and are done again")
                    return
        done = [entry.request_redis for entry in batch if isinstance(entry, _Done)]
        if done:  # the requests go only once their items are saved
            self._db.zrem(self._table, *done)

    def busy(self) -> bool:
        return not self._items.empty() or self._adding.locked()


class Collector(threading.Thread):
    def __init__(self, db: redis.Redis, table: str) -> None:
        super().__init__(daemon=True)
        self._db, self._table = db, table
        self._todo: queue.Queue = queue.Queue(maxsize=setting["COLLECTOR_TASK_COUNT"])
        self._take = db.register_script(TAKE_AND_RESCORE)
        self.collecting = False

    def run(self) -> None:
        while True:
            if self._todo.qsize() > 1:
                time.sleep(0.1)
                continue
            now = int(time.time())
            taken = self._take(keys=[self._table], args=["-inf", now, now + setting["REQUEST_LOST_TIMEOUT"],
                                                         setting["COLLECTOR_TASK_COUNT"] - self._todo.qsize()])
            self.collecting = bool(taken)
            for text in taken:
                self._todo.put(text.decode())
            if not taken:
                time.sleep(0.1)

    def get_request(self) -> str | None:
        try:
            return self._todo.get(timeout=1)
        except queue.Empty:
            return None

    def requests_count(self) -> int:
        """The requests waiting here or in Redis, leased ones included: a crawl is done only at 0."""
        return self._todo.qsize() or self._db.zcard(self._table)


class Spider:
    """feapder.Spider: subclass it, give `start_requests` and parser methods yielding Requests and Items."""

    __custom_setting__: dict = {}

    def __init__(self, redis_key: str) -> None:
        setting.update(self.__custom_setting__)
        self._db = redis.Redis.from_url(setting["REDISDB_URL"])
        self._tab_requests = f"{redis_key}:z_requests"
        self._tab_status = f"{redis_key}:h_spider_status"
        self._request_buffer = RequestBuffer(self._db, self._tab_requests)
        self._item_buffer = ItemBuffer(self._db, self._tab_requests, list(setting["ITEM_PIPELINES"]))
        self._collector = Collector(self._db, self._tab_requests)
        self._session = requests.Session()
        self._idle = False  # until the parser first finds nothing to do
        self.reset_task()

    def start_requests(self) -> Iterable[Request]:
        return []

    def reset_task(self, heartbeat_interval: int = 10) -> None:
        """A crawler that was alive a moment ago died: take its leased requests back now."""
        beat = self._db.hget(self._tab_status, "heartbeat_time")
        now = int(time.time())
        if beat and now - int(beat) < heartbeat_interval:
            lost = self._db.zrangebyscore(self._tab_requests, now, now + setting["REQUEST_LOST_TIMEOUT"])
            if lost:
                self._db.zadd(self._tab_requests, {text: 300 for text in lost})
                log(f"reset {len(lost)} lost requests")

    def _heartbeat(self) -> None:
        while True:
            self._db.hset(self._tab_status, "heartbeat_time", int(time.time()))
            time.sleep(HEARTBEAT_INTERVAL_S)

    def start(self) -> None:
        threading.Thread(target=self._heartbeat, daemon=True).start()
        for thread in (self._request_buffer, self._item_buffer, self._collector):
            thread.start()
        todo = self._collector.requests_count()
        if todo:
            log(f"{todo} requests to do: carrying on where the last run stopped")
        else:
            for request in self.start_requests():
                self._request_buffer.put_request(request)
            self._request_buffer.flush()
        threading.Thread(target=self._parse_requests, daemon=True).start()
        while not self._all_thread_is_done():
            time.sleep(1)
        log("spider done")

    def _parse_requests(self) -> None:
        while True:
            request_redis = self._collector.get_request()
            if request_redis is None:
                if not self._idle:  # as feapder's parser control says it, once per idle spell
                    log(f"waiting for tasks... ({self._collector.requests_count()} requests in Redis)")
                self._idle = True
                continue
            self._idle = False
            self._deal_request(request_redis)

    def _deal_request(self, request_redis: str) -> None:
        request = Request.from_redis(request_redis)
        try:
            response = self._session.get(request.url, timeout=30)
            response.raise_for_status()
            results = list(getattr(self, request.callback)(request, response) or [])
        except Exception as error:  # noqa: BLE001 - feapder retries any failure of a request
            log(f"{request.url} failed ({error}); retry {request.retry_times + 1}")
            if request.retry_times < setting["SPIDER_MAX_RETRY_TIMES"]:
                self._request_buffer.put_request(Request(request.url, request.callback, request.priority,
                                                         request.retry_times + 1))
            self._request_buffer.put_del_request(request_redis)
            return
        items = [result for result in results if isinstance(result, Item)]
        for result in results:
            if isinstance(result, Request):
                self._request_buffer.put_request(result)
        for item in items:
            self._item_buffer.put_item(item)
        if items:
            self._item_buffer.put_item(_Done(request_redis))
        else:
            self._request_buffer.put_del_request(request_redis)

    def _all_thread_is_done(self) -> bool:
        for _ in range(3):  # as feapder: three looks a second apart, since the parts are not in step
            if (self._collector.collecting or self._collector.requests_count() or not self._idle
                    or self._item_buffer.busy() or self._request_buffer.count()):
                return False
            time.sleep(1)
        return True
