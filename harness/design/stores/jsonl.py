"""The jsonl store kind: a JSON-lines file under the run's work_dir, one record a line; a torn line is unreadable."""

from __future__ import annotations

import os

from killtest.harness.design.model import StoreSpec
from killtest.harness.design.stores import (
    COUNTER_NEEDS_A_QUERY,
    LEASES_NEED_A_QUERY,
    StoreBase,
    StoredRecord,
    needs,
    record_from_json,
    refuses,
)


class JsonLinesStore(StoreBase):
    name = "jsonl"
    description = "a JSON-lines file under {work_dir}, one record a line; no leases or counter"
    spec_rules = {
        "path": needs('a jsonl store needs path = "{work_dir}/..."'),
        "records": refuses("a jsonl store has no query: each line is one record"),
        "leases": refuses(LEASES_NEED_A_QUERY),
        "counter": refuses(COUNTER_NEEDS_A_QUERY),
    }

    def records(self, spec: StoreSpec, location: str) -> list[StoredRecord]:
        if not os.path.exists(location):
            return []
        with open(location, encoding="utf-8", errors="replace") as lines:
            return [record_from_json(spec, f"line {number}", line) for number, line in enumerate(lines, start=1)
                    if line.strip()]


KIND = JsonLinesStore()
