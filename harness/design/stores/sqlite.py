"""The sqlite store kind: a SQLite file under the run's work_dir, read by the spec's queries, read-only."""

from __future__ import annotations

import os
import shutil
import sqlite3

from killtest.harness import lifeline
from killtest.harness.design.model import StoreSpec
from killtest.harness.design.stores import QueryStore, needs
from killtest.harness.errors import KilltestError


class SQLiteStore(QueryStore):
    name = "sqlite"
    description = "a SQLite file under {work_dir}; records, leases and counter are queries on it"
    spec_rules = {
        "path": needs('a sqlite store needs path = "{work_dir}/..."'),
        "records": needs('a sqlite store needs records = "SELECT key, field, ... FROM ..."'),
    }

    def query(self, spec: StoreSpec, location: str, sql: str, spec_key: str) -> tuple[list[str], list[tuple]]:
        if not os.path.exists(location):
            return [], []  # killed before it created its store: nothing stored
        if os.path.exists(f"{location}-journal"):
            # Killed inside a transaction: a hot journal, which a read-only connection cannot roll back. Read a
            # copy, rolled back as the next start's first open would, and leave the store itself as it is.
            # A worker still alive (a rolling redeploy, one worker killed of several) may end its transaction
            # between the look and the copy: its journal gone, the store is whole again and is read as it is.
            with lifeline.temp_dir(prefix="killtest-sqlite-") as scratch:  # swept if the harness dies here
                copy = os.path.join(scratch, os.path.basename(location))
                shutil.copyfile(location, copy)
                try:
                    shutil.copyfile(f"{location}-journal", f"{copy}-journal")
                except FileNotFoundError:
                    pass
                else:
                    return self._read(spec, copy, sql, spec_key, f"file:{copy}")
        # Read-only URI: the harness must never be the one that changes a store it is judging.
        return self._read(spec, location, sql, spec_key, f"file:{location}?mode=ro")

    def _read(self, spec: StoreSpec, location: str, sql: str, spec_key: str,
              uri: str) -> tuple[list[str], list[tuple]]:
        db = sqlite3.connect(uri, uri=True, timeout=5)
        try:
            cursor = db.execute(sql)
            return [d[0] for d in cursor.description or ()], cursor.fetchall()
        except sqlite3.OperationalError as error:
            if "no such table" in str(error):
                return [], []  # killed between creating the file and creating its schema
            raise KilltestError(f"{spec.where(spec_key)}: store.{spec_key} failed on the store: {error}") from None
        except sqlite3.DatabaseError as error:
            raise KilltestError(f"{spec.where('path')}: {location} is not a readable SQLite file: {error}") from None
        finally:
            db.close()


KIND = SQLiteStore()
