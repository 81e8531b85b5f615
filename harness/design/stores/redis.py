"""The redis store kind: the harness's private Redis, records a hash of JSON objects, leases a list or a set.

This module is killtest.harness.design.stores.redis; `import redis` below is redis-py (imports are absolute).
"""

from __future__ import annotations

import json

from killtest.harness.design.model import StoreSpec
from killtest.harness.design.stores import (
    COUNTER_NEEDS_A_QUERY,
    ServerStore,
    StoredRecord,
    needs,
    record_from_row,
    refuses,
)
from killtest.harness.errors import KilltestError


class RedisStore(ServerStore):
    name = "redis"
    description = ("a private Redis, given as {dsn}; records is a hash of JSON records, leases a list or set"
                   " of paths; no counter")
    server = "redis"  # harness/servers/private_redis.py
    spec_rules = {
        "records": needs('a redis store needs records = "HASH": the hash whose values are JSON records'),
        "counter": refuses(COUNTER_NEEDS_A_QUERY),
    }

    def records(self, spec: StoreSpec, location: str) -> list[StoredRecord]:
        """Each value of the hash `records` is one record as a JSON object."""
        import redis

        with redis.Redis.from_url(location) as client:
            try:
                values = client.hvals(spec.records)
            except redis.exceptions.ResponseError as error:
                raise KilltestError(f"{spec.where('records')}: store.records {spec.records!r} is not a Redis hash:"
                                    f" {error}") from None
        records = []
        for number, value in enumerate(values, start=1):
            try:
                row = json.loads(value)
            except ValueError:
                records.append(StoredRecord(None, unreadable=f"value {number} of {spec.records} is not JSON"))
                continue
            records.append(record_from_row(spec, row) if isinstance(row, dict) and spec.key in row else
                           StoredRecord(None, unreadable=f"value {number} of {spec.records} has no {spec.key!r}"))
        return records

    def leases(self, spec: StoreSpec, location: str) -> list[str]:
        """The paths in the Redis list or set `leases` (for BullMQ, a queue's active job IDs)."""
        import redis

        with redis.Redis.from_url(location) as client:
            held_as = client.type(spec.leases).decode()
            members = client.lrange(spec.leases, 0, -1) if held_as == "list" else client.smembers(spec.leases) \
                if held_as == "set" else []
        return sorted(m.decode() for m in members)


KIND = RedisStore()
