"""The json_files store kind: a folder under the run's work_dir, one JSON file a record (Crawlee's dataset)."""

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


class JsonFilesStore(StoreBase):
    name = "json_files"
    description = ("a folder under {work_dir}, one JSON record a file, as Crawlee's dataset keeps them;"
                   " no leases or counter")
    spec_rules = {
        "path": needs('a json_files store needs path = "{work_dir}/..."'),
        "records": refuses("a json_files store has no query: each file is one record"),
        "leases": refuses(LEASES_NEED_A_QUERY),
        "counter": refuses(COUNTER_NEEDS_A_QUERY),
    }

    def records(self, spec: StoreSpec, location: str) -> list[StoredRecord]:
        """Each *.json file in the folder is one record; names that start with `__` are the framework's
        own metadata."""
        if not os.path.isdir(location):
            return []
        names = sorted(n for n in os.listdir(location) if n.endswith(".json") and not n.startswith("__"))
        records = []
        for name in names:
            with open(os.path.join(location, name), encoding="utf-8", errors="replace") as file:
                records.append(record_from_json(spec, f"file {name}", file.read()))
        return records


KIND = JsonFilesStore()
