"""What every shipped design shares: its command line, the page parsing for the fixture site, and its events."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time

PRODUCT_LINK = re.compile(r'href="(/product/\d+)"')
LISTING_LINK = re.compile(r'href="(/list/\d+)"')
NAME = re.compile(r'class="name">([^<]+)<')
SKU = re.compile(r'class="sku">([^<]+)<')
PRICE = re.compile(r'class="price">([^<]+)<')
FIRST_PAGE = "/list/0"


class ScraperArgumentError(SystemExit):
    """A bad command line: one line on stderr and exit status 2, never a traceback."""

    def __init__(self, message: str) -> None:
        print(f"error: {message}", file=sys.stderr)
        super().__init__(2)


def parse_args(prog: str, argv: list[str] | None, with_lease: bool = False, store: str = "db") -> argparse.Namespace:
    """The designs' shared command line; `store` is "db" (a SQLite file) or "dsn" (a PostgreSQL database)."""
    parser = argparse.ArgumentParser(prog=prog, description=f"The {prog} scraper design under test.")
    parser.add_argument("--base", required=True, help="the site's base URL, for example http://127.0.0.1:8000")
    if store == "dsn":
        parser.add_argument("--dsn", required=True, help="the PostgreSQL database that holds the records")
    else:
        parser.add_argument("--db", required=True, help="the SQLite file that holds the scraper's records")
    if with_lease:
        parser.add_argument("--lease", type=float, default=60.0,
                            help="seconds a claimed URL stays leased before another start may take it (default 60)")
        parser.add_argument("--crawl", type=int, default=1,
                            help="which crawl of the store this is; crawl 2 re-visits every page (default 1)")
    args = parser.parse_args(argv)
    if not args.base.startswith(("http://", "https://")):
        raise ScraperArgumentError(f"--base must be an http:// or https:// URL, not {args.base!r}")
    args.base = args.base.rstrip("/")
    if store == "db" and not os.path.isdir(os.path.dirname(os.path.abspath(args.db))):
        raise ScraperArgumentError(f"the directory for --db does not exist: {os.path.dirname(os.path.abspath(args.db))}")
    if with_lease and args.crawl < 1:
        raise ScraperArgumentError(f"--crawl counts from 1, not {args.crawl}")
    if with_lease and not args.lease > 0:
        raise ScraperArgumentError(f"--lease must be a positive number of seconds, not {args.lease}")
    return args


def fetch(session, url: str) -> str:
    """The page's text; an HTTP error status raises, so an error page is never parsed as content."""
    response = session.get(url, timeout=30)
    response.raise_for_status()
    return response.text


# Retries of one page before the design gives up on it for now (it leaves the page claimed: its lease
# brings it back to a later claim). The waits double from RETRY_BASE_S, or follow the site's Retry-After.
MAX_ATTEMPTS = 5
RETRY_BASE_S = 0.1
MAX_RETRY_WAIT_S = 2.0
FETCH_TIMEOUT_S = 10.0


class TransientPageError(Exception):
    """A page that did not arrive whole: a 5xx or 429, a dropped connection, a body cut short."""

    def __init__(self, reason: str, wait_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait_s = wait_s  # what the site asked for (Retry-After), if it did


def fetch_page(session, url: str, path: str = "") -> str:
    """The page's text, whole: retried with backoff on what a flaky network does, Retry-After honoured.

    Safe only because every write downstream is idempotent (seeds/000: make retries safe first, then
    make them frequent). A 4xx other than 429 is the page's answer, not a fault: it raises at once.
    """
    # A page cut short can still be valid HTTP (a proxy's Content-Length agrees with what it sent).
    return with_retries(lambda: exchange(session, "GET", url, whole=lambda r: "</html>" in r.text[-64:]),
                        path or url).text


def with_retries(attempt, what: str):
    """attempt()'s result; a TransientPageError is retried after a doubling wait or the site's
    Retry-After, each retry a `retry` event, and raised once MAX_ATTEMPTS are spent."""
    for number in range(1, MAX_ATTEMPTS + 1):
        try:
            return attempt()
        except TransientPageError as error:
            if number == MAX_ATTEMPTS:
                raise
            wait_s = error.wait_s if error.wait_s is not None else RETRY_BASE_S * 2 ** (number - 1)
            wait_s = min(wait_s, MAX_RETRY_WAIT_S)
            emit("retry", path=what, reason=error.reason, attempt=number, wait_s=wait_s)
            time.sleep(wait_s)
    raise AssertionError("unreachable")


def exchange(session, method: str, url: str, whole=lambda response: True, **kwargs):
    """One request and its response, or a TransientPageError for a dropped connection, a 429 or 5xx
    (with its Retry-After) and a body `whole` does not accept; any other HTTP error raises as it is."""
    import requests

    try:
        response = session.request(method, url, timeout=FETCH_TIMEOUT_S, **kwargs)
    except (requests.ConnectionError, requests.Timeout) as error:
        raise TransientPageError(f"{type(error).__name__}") from error
    if response.status_code == 429 or response.status_code >= 500:
        raise TransientPageError(f"HTTP {response.status_code}", _retry_after(response.headers.get("Retry-After")))
    response.raise_for_status()
    if not whole(response):
        raise TransientPageError("truncated body")
    return response


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds; the HTTP-date form is not sent by the fixture site and is ignored."""
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def parse_product(html: str) -> dict[str, str]:
    """The SKU, price and name on a product page."""
    found = {"sku": SKU.search(html), "price": PRICE.search(html), "name": NAME.search(html)}
    missing = [field for field, match in found.items() if match is None]
    if missing:
        raise ValueError(f"product page without a {' or a '.join(missing)}")
    return {field: match.group(1) for field, match in found.items() if match is not None}


@contextlib.contextmanager
def immediate_transaction(db):
    """A SQLite write transaction (the connection is in autocommit mode): all of it or none of it."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def emit(event: str, **fields) -> None:
    """One JSON line on stdout that the harness copies into the run's history (time.monotonic clock)."""
    print(json.dumps({"event": event, "t": time.monotonic(), **fields}), flush=True)
