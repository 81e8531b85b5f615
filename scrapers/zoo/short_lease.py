"""Zoo: a lease shorter than the slowest page, with two workers.

Each start runs two worker threads on one store. The lease is fixed at 0.2 s, whatever the run
asks for; when a page takes longer, the other worker finds the lease expired, claims the page and
fetches it a second time while the first is still at it. The fenced commit then refuses the first
worker's result, and the second's too once the first has claimed the page back: a page slower than the
lease is never finished (liveness and a lost record beside the expected finding). A lease must outlast
the slowest page, or be renewed while the page is fetched.
"""

from __future__ import annotations

import threading

import requests

from killtest.scrapers import idempotent
from killtest.scrapers.common import emit, parse_args

LEASE_S = 0.2
WORKERS = 2


def work(db_path: str, crawl: int, base: str, failures: list) -> None:
    try:
        idempotent.crawl_site(idempotent.open_store(db_path), crawl, base, requests.Session(), LEASE_S)
    except BaseException as error:  # a worker's error must fail the start, not vanish with its thread
        failures.append(error)


def main(argv=None) -> None:
    args = parse_args("short-lease", argv, with_lease=True)
    idempotent.open_store(args.db)
    emit("ready")
    failures: list = []
    workers = [threading.Thread(target=work, args=(args.db, args.crawl, args.base, failures)) for _ in range(WORKERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if failures:
        raise failures[0]
    emit("finished")


if __name__ == "__main__":
    main()
