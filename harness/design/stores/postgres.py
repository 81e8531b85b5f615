"""The postgres store kind: a fresh database on the harness's private PostgreSQL, read by the spec's queries."""

from __future__ import annotations

from killtest.harness.design.model import StoreSpec
from killtest.harness.design.stores import QueryStore, ServerStore, needs
from killtest.harness.errors import KilltestError


class PostgresStore(ServerStore, QueryStore):
    name = "postgres"
    description = ("a fresh database on a private PostgreSQL, given as {dsn}; records, leases and counter are"
                   " queries on it")
    server = "postgres"  # harness/servers/private_postgres.py
    spec_rules = {
        "records": needs('a postgres store needs records = "SELECT key, field, ... FROM ..."'),
    }

    def query(self, spec: StoreSpec, location: str, sql: str, spec_key: str) -> tuple[list[str], list[tuple]]:
        import psycopg  # only designs with a PostgreSQL store need it

        try:
            with psycopg.connect(location, autocommit=True, connect_timeout=10) as db:
                with db.cursor() as cursor:
                    cursor.execute(sql)
                    return [d.name for d in cursor.description or ()], cursor.fetchall()
        except psycopg.errors.UndefinedTable:
            return [], []  # killed before it created its schema
        except psycopg.Error as error:
            message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise KilltestError(f"{spec.where(spec_key)}: store.{spec_key} failed on the store: {message}") from None


KIND = PostgresStore()
