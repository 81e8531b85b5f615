"""A recorded site: the WARC file `killtest record` wrote, and the reference records that stand in for the catalog.

The checker compares a run's store with a Catalog (killtest.fixture_site.catalog). A recorded site is a
Catalog too (`RecordedSite`), so every check reads it unchanged: its products are the reference
store's records (key and fields), and its `full_crawl_requests` is the number of requests an
uninterrupted run against the replay made. It also knows which URLs the recording holds
(`recorded`), so a request outside it is reported, never guessed at.

The WARC holds a request record followed by its response record for every exchange, written and
read with warcio (https://github.com/webrecorder/warcio: WARCWriter.create_warc_record,
ArchiveIterator); a response's payload is kept as it came over the wire (still gzip-encoded when
the site compressed it), so the replay answers with the recorded bytes and headers. A payload
recorded before (the same bytes: a logo, a script, a page fetched twice) is written once: later
answers are revisit records (WARC 1.0's identical-payload-digest profile, warcio's
create_revisit_record) holding their own status and headers and the first record's payload digest.

Credentials are masked before an exchange reaches write_exchange (killtest.fixture_site.recordings.redaction);
a RecordedSite masks a request the same way before it looks it up.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from killtest.fixture_site.catalog import Catalog, Product
from killtest.fixture_site.recordings.redaction import DEFAULT_REDACTION, Redaction

# Hop-by-hop headers (RFC 9110 7.6.1) and the framing the WARC payload no longer has (it is de-chunked).
NOT_REPLAYED = {"transfer-encoding", "connection", "keep-alive", "proxy-connection", "content-length"}


def match_key(method: str, url: str, ignore_params: tuple[str, ...] = ()) -> str:
    """What a request is looked up by: its method and exact URL, minus the query parameters to ignore
    (mitmproxy's server_replay_ignore_params has the same meaning); the others keep their order."""
    parts = urlsplit(url)
    query = parts.query
    if ignore_params:
        query = urlencode([(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in ignore_params])
    return f"{method.upper()} {urlunsplit((parts.scheme, parts.netloc.lower(), parts.path or '/', query, ''))}"


@dataclass(frozen=True)
class Exchange:
    """One recorded answer: status, headers as sent (minus hop-by-hop), and the payload's bytes."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    url: str = ""

    def text(self) -> str:
        """The payload as text, decoded from the content-encoding it was sent with (what a scraper parsed)."""
        encoding = dict((k.lower(), v.lower()) for k, v in self.headers).get("content-encoding", "")
        body = self.body
        try:
            if encoding in ("gzip", "x-gzip"):
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
        except (OSError, zlib.error):
            return ""
        return body.decode("utf-8", errors="replace")


REVISIT_FROM = 256  # bytes: below it a revisit record (its WARC headers) would not be smaller than the payload


def write_exchange(writer, url: str, method: str, request_headers: list[tuple[str, str]], request_body: bytes,
                   status: int, reason: str, response_headers: list[tuple[str, str]], body: bytes,
                   stored: dict[str, tuple[str, str]] | None = None) -> None:
    """Append one request record and its response record to a warcio WARCWriter.

    `stored` (payload digest -> the URL and date of the record holding it), kept by the caller across
    calls, makes a payload already written a revisit record instead of a second copy."""
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders

    target = urlsplit(url)
    path = urlunsplit(("", "", target.path or "/", target.query, ""))
    request = writer.create_warc_record(url, "request", payload=BytesIO(request_body), http_headers=StatusAndHeaders(
        f"{method} {path} HTTP/1.1", request_headers, is_http_request=True))
    kept = [(k, v) for k, v in response_headers if k.lower() not in NOT_REPLAYED] + [("Content-Length", str(len(body)))]
    http_headers = StatusAndHeaders(f"{status} {reason or 'OK'}", kept, protocol="HTTP/1.1")
    response = writer.create_warc_record(url, "response", payload=BytesIO(body), http_headers=http_headers)
    digest = response.rec_headers.get_header("WARC-Payload-Digest")
    if stored is not None and len(body) >= REVISIT_FROM and digest in stored:
        response = writer.create_revisit_record(url, digest, *stored[digest], http_headers=http_headers)
    elif stored is not None:
        stored[digest] = (url, response.rec_headers.get_header("WARC-Date"))
    response.rec_headers.add_header("WARC-Concurrent-To", request.rec_headers.get_header("WARC-Record-ID"))
    writer.write_record(request)
    writer.write_record(response)


def read_exchanges(path: str, ignore_params: tuple[str, ...] = (), redaction: Redaction = DEFAULT_REDACTION
                   ) -> dict[str, Exchange]:
    """Every recorded answer by match_key, its URL masked (a no-op but on a recording made before masking);
    the last one recorded for a key wins (a page fetched twice)."""
    try:
        from warcio.archiveiterator import ArchiveIterator
    except ImportError:
        raise ValueError("a recorded site needs warcio, which is not installed here: pip install 'killtest[record]'"
                         ) from None

    methods: dict[str, str] = {}
    payloads: dict[str, bytes] = {}  # payload digest -> bytes, for the revisit records that refer to them
    found: dict[str, Exchange] = {}
    try:
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                record_id = record.rec_headers.get_header("WARC-Record-ID")
                if record.rec_type == "request":
                    methods[record_id] = record.http_headers.protocol  # the request line's method
                elif record.rec_type in ("response", "revisit") and record.http_headers is not None:
                    method = methods.get(record.rec_headers.get_header("WARC-Concurrent-To") or "", "GET")
                    url = record.rec_headers.get_header("WARC-Target-URI")
                    headers = tuple((k, v) for k, v in record.http_headers.headers if k.lower() not in NOT_REPLAYED)
                    digest = record.rec_headers.get_header("WARC-Payload-Digest") or ""
                    if record.rec_type == "response":
                        body = payloads[digest] = record.raw_stream.read()
                    elif digest in payloads:
                        body = payloads[digest]
                    else:
                        raise ValueError(f"a revisit record of {url} refers to a payload ({digest}) the file lacks")
                    found[match_key(method, redaction.url(url), ignore_params)] = Exchange(
                        int(record.http_headers.get_statuscode()), headers, body, url)
    except OSError as error:
        raise ValueError(f"cannot read the recording {path}: {error.strerror}") from None
    except Exception as error:  # warcio's ArchiveLoadFailed and the like: not a WARC file, or a damaged one
        why = (str(error).strip().splitlines() or [""])[0]
        raise ValueError(f"cannot read the recording {path}: not a readable WARC file ({type(error).__name__}:"
                         f" {why})") from None
    return found


@dataclass(frozen=True)
class RecordedProduct(Product):
    """One record of the reference store: its key (as `sku`), its fields, and where it came from if known."""

    values: tuple[tuple[str, str], ...] = ()
    page: str = ""  # the URL of the one recorded page that shows its key and values; "" when none or several

    @property
    def path(self) -> str:
        """As the request log holds the page (`/` + its URL), or a path no request has when the page is unknown."""
        return f"/{self.page}" if self.page else f"reference:{self.sku}"

    @property
    def name(self) -> str:
        return dict(self.values).get("name", "")

    def fields(self) -> dict[str, str]:
        return dict(self.values)


@dataclass(frozen=True)
class RecordedSite(Catalog):
    """A recording and its reference store, standing in for the shop's catalog wherever one is read."""

    recording: str = ""
    start_url: str = ""
    ignore_params: tuple[str, ...] = ()
    reference_requests: int = 0
    redaction: Redaction = DEFAULT_REDACTION
    exchanges: dict[str, Exchange] = field(default_factory=dict, compare=False, repr=False)

    @property
    def full_crawl_requests(self) -> int:  # a figure of the reference run here, not a count of pages
        return self.reference_requests

    def answer(self, method: str, url: str) -> Exchange | None:
        return self.exchanges.get(match_key(method, self.redaction.url(url), self.ignore_params))

    def recorded(self, logged_path: str) -> bool:
        """Whether a path of the request log (`/` + the URL the scraper asked for) is in the recording."""
        url = logged_path[1:] if logged_path.startswith("/") else logged_path
        return any(self.answer(method, url) is not None for method in ("GET", "HEAD", "POST"))


def record_counts(path: str) -> Counter[str]:
    """How many records of each WARC type the file holds: a request per exchange, its response or revisit, warcinfo."""
    from warcio.archiveiterator import ArchiveIterator

    with open(path, "rb") as stream:
        return Counter(record.rec_type for record in ArchiveIterator(stream))


def reference_path(recording: str) -> str:
    """Where the reference records of a recording live: beside it, `x.warc.gz` -> `x.reference.json`."""
    base = recording[:-len(".warc.gz")] if recording.endswith(".warc.gz") else os.path.splitext(recording)[0]
    return base + ".reference.json"


def write_reference(recording: str, start_url: str, requests: int, records: dict[str, dict[str, str]]) -> str:
    path = reference_path(recording)
    with open(path + ".tmp", "w", encoding="utf-8") as out:
        json.dump({"start_url": start_url, "requests": requests,
                   "records": [{"key": k, "fields": records[k]} for k in sorted(records)]}, out, indent=1)
    os.replace(path + ".tmp", path)
    return path


def load_recorded_site(recording: str, start_url: str, ignore_params: tuple[str, ...] = (),
                       need_reference: bool = True, redaction: Redaction = DEFAULT_REDACTION) -> RecordedSite:
    """The recorded site: the WARC's answers and, when `need_reference`, the reference records beside it.
    A missing or unreadable file raises ValueError with one line naming it."""
    reference: dict[str, Any] = {"records": [], "requests": 0}
    if need_reference:
        path = reference_path(recording)
        try:
            with open(path, encoding="utf-8") as src:
                reference = json.load(src)
        except (OSError, ValueError) as error:
            raise ValueError(f"cannot read the reference records {path} ({error}):"
                             " run `killtest record` first") from None
    exchanges = read_exchanges(recording, tuple(ignore_params), redaction)
    try:
        pages = pages_of(exchanges, {str(r["key"]): {k: str(v) for k, v in r["fields"].items()}
                                     for r in reference["records"]}, redaction)
        int(reference["requests"])
    except (KeyError, TypeError, AttributeError, ValueError) as error:
        raise ValueError(f"the reference records {reference_path(recording)} are damaged ({type(error).__name__}:"
                         f" {error}): run `killtest record` again") from None
    products = tuple(RecordedProduct(index=i, sku=str(r["key"]), price=str(r["fields"].get("price", "")),
                                     values=tuple(sorted((k, str(v)) for k, v in r["fields"].items())),
                                     page=pages.get(str(r["key"]), ""))
                     for i, r in enumerate(reference["records"]))
    return RecordedSite(products=products, products_per_page=max(1, len(products)), recording=recording,
                        start_url=start_url, ignore_params=tuple(ignore_params),
                        reference_requests=int(reference["requests"]), redaction=redaction,
                        exchanges=exchanges)


def pages_of(exchanges: dict[str, Exchange], records: dict[str, dict[str, str]],
             redaction: Redaction = DEFAULT_REDACTION) -> dict[str, str]:
    """For each record, the URL of the one successful page whose text shows its key and every value
    (the text's URLs masked, as a stored record's are on a recorded site).

    Found by content, not by timing, so a concurrent scraper is attributed as well as a sequential
    one; a record no page (or more than one page) shows keeps no page, and the checks that need one
    (a page fetched again after its record was stored) do not judge it."""
    texts = [(exchange.url, redaction.urls(exchange.text())) for exchange in exchanges.values()
             if exchange.status == 200]
    found = {}
    for key, fields in records.items():
        showing = [url for url, text in texts if key in text and all(v in text for v in fields.values())]
        if len(showing) == 1:
            found[key] = showing[0]
    return found
