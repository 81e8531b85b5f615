"""Likely secrets left in a recording: what `killtest check-recording FILE` and `killtest record` report.

Redaction (killtest.fixture_site.recordings.redaction) masks the names it knows; this scan looks for what it
may have missed, record by record, and says where each suspect is (the record's number and URL,
then the header, the URL or the body):
- a header or query (or form-body) parameter whose name looks like a credential, with a value other
  than the placeholder, and a Set-Cookie that sets a value;
- a bearer token (`Bearer <token>`) in any header or request body;
- a long random-looking string in a request header or in a URL (a path segment or a parameter);
- an e-mail address in a request body;
- a credential-named parameter in a response's Location, in the query of a Link's or Refresh's URL, and in
  the URL a redirect's body repeats (`Found. Redirecting to /p?api_key=...`: the recording keeps bodies).
A suspect is shown by its first characters and its length, never in full: the scan's output goes to
CI logs. So is the URL a line names: each suspect's value in it, and the value of every parameter
whose name looks like a credential, is replaced by its hint (`?api_key=<live... 8 chars>&page=2`).
Names the recording kept on purpose (its spec's `unredacted`, written into the WARC's warcinfo record
by the recorder) are not suspects by their name, only by what their value looks like.

Random-looking: a run of 20 or more letters and digits, both present, whose characters carry at
least 3.5 bits of entropy each (hex of 32 or more digits counts too); slugs, words and UUIDs do not.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

from killtest.fixture_site.recordings.redaction import (
    ENDS,
    FORM,
    LINK_TARGET,
    PLACEHOLDER,
    REFRESH_TARGET,
    REQUEST_HEADERS,
    URL_IN_TEXT,
    looks_like_credential,
)

CREDENTIAL_PARAMETER = "a credential parameter, not masked"
INFO_UNREDACTED = "killtest-unredacted"  # the warcinfo field naming the names kept verbatim
BEARER = re.compile(r"\bBearer\s+([A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE)
EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
RUN = re.compile(r"[A-Za-z0-9]{20,}")
HEX = re.compile(r"\b[0-9a-fA-F]{32,}\b")
# Response headers whose values are random by design, not secrets; a request's If-None-Match echoes an ETag.
RANDOM_BY_DESIGN = {"etag", "if-none-match", "x-request-id", "x-amz-request-id", "traceparent", "content-md5",
                    "digest", "x-amz-id-2", "cf-ray", "sec-websocket-key", "sec-websocket-accept"}


@dataclass(frozen=True)
class Suspect:
    record: int  # 1-based, in file order
    url: str
    where: str  # "request header Authorization", "URL parameter api_key", "request body", ...
    what: str  # "a bearer token", ...
    hint: str  # the first characters and the length

    def line(self, path: str) -> str:
        return f"{path}: record {self.record} ({self.url}): {self.where}: {self.what} ({self.hint})"


def hint(value: str) -> str:
    return f"{value[:4]}... {len(value)} chars"


def shown_url(url: str, values: list[str]) -> str:
    """The URL as a line shows it: every suspect's value (`values`) and the value of every credential-named
    query parameter replaced by its hint, in whatever encoding the URL holds it; the rest as it is."""
    def hide(text: str) -> str:
        for value in sorted(set(values), key=len, reverse=True):
            for form in {value, quote(value, safe=""), quote_plus(value)}:
                text = text.replace(form, f"<{hint(value)}>")
        return text

    parts = urlsplit(url)
    pairs = []
    for pair in parts.query.split("&") if parts.query else []:
        name, eq, raw = pair.partition("=")
        value = unquote_plus(raw)
        masked = eq and value and value != PLACEHOLDER and looks_like_credential(unquote_plus(name))
        pairs.append(f"{name}=<{hint(value)}>" if masked else hide(pair))
    return urlunsplit((parts.scheme, hide(parts.netloc), hide(parts.path), "&".join(pairs), hide(parts.fragment)))


def entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def random_strings(text: str) -> list[str]:
    found = [m.group(0) for m in HEX.finditer(text)]
    for match in RUN.finditer(text):
        run = match.group(0)
        if run in found or not (re.search(r"[A-Za-z]", run) and re.search(r"[0-9]", run)):
            continue
        if entropy(run) >= 3.5:
            found.append(run)
    return found


def _clean(value: str) -> bool:
    """Masked already: nothing but the placeholder where values were (`Bearer <p>`, `a=<p>; b=<p>`)."""
    return PLACEHOLDER in value and not random_strings(value.replace(PLACEHOLDER, ""))


def _kept(name: str, kept: set[str]) -> str:
    """What a suspect by value adds when its name is kept on purpose: the user's choice, not the masking's miss."""
    return ", in a name kept by [site] unredacted" if name in kept else ""


def scan_headers(side: str, headers: list[tuple[str, str]], kept: set[str]) -> list[tuple[str, str, str]]:
    found = []
    for name, value in headers:
        lower, where = name.lower(), f"{side} header {name}"
        by_name = lower in REQUEST_HEADERS or lower == "set-cookie" or looks_like_credential(name)
        if by_name and lower not in kept and value.strip() and not _clean(value):
            found.append((where, "a credential header, not masked", value))
        elif (bearer := BEARER.search(value)) and bearer.group(1) != PLACEHOLDER:
            found.append((where, "a bearer token", bearer.group(1)))
        elif side == "request" and lower not in RANDOM_BY_DESIGN and (
                randoms := random_strings(value.replace(PLACEHOLDER, ""))):
            found.append((where, "a long random string" + _kept(lower, kept), randoms[0]))
    return found


def _unmasked_credential(name: str, value: str, kept: set[str]) -> bool:
    """A parameter whose name looks like a credential, not kept on purpose, holding a value other than the mask."""
    return looks_like_credential(name) and name.lower() not in kept and bool(value) and value != PLACEHOLDER


def scan_url(url: str, kept: set[str]) -> list[tuple[str, str, str]]:
    found = []
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    for name, value in pairs:
        if _unmasked_credential(name, value, kept):
            found.append((f"URL parameter {name}", CREDENTIAL_PARAMETER, value))
        elif randoms := random_strings(value):
            found.append((f"URL parameter {name}", "a long random string" + _kept(name.lower(), kept), randoms[0]))
    for name, value in parse_qsl(parts.fragment, keep_blank_values=True) if "=" in parts.fragment else []:
        if _unmasked_credential(name, value, kept):
            found.append((f"URL fragment parameter {name}", CREDENTIAL_PARAMETER, value))  # `#access_token=...`
    for randoms in [random_strings(unquote(parts.path))]:
        if randoms:
            found.append(("URL path", "a long random string", randoms[0]))
    return found


def urls_in_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(header name, URL) for each URL a response header names, relative ones included: Location whole (as
    before), and of each `<...>` of a Link and a Refresh's url= the query alone (a Link's path is often a hashed
    asset's name, `/assets/app-<64 hex>.css`, not a secret); unparsable ones left out."""
    found = []
    for name, value in headers:
        lower = name.lower()
        targets = [value] if lower == "location" else LINK_TARGET.findall(value) if lower == "link" else \
            [m.group(2) for m in REFRESH_TARGET.finditer(value)] if lower == "refresh" else []
        for target in targets:
            try:
                query = urlsplit(target).query
            except ValueError:
                continue
            found.append((name, target if lower == "location" else "?" + query))
    return found


# A redirect's words (`Found. Redirecting to /p?api_key=...`, as Express and Werkzeug write them): its query.
_QUERY_PARAM = re.compile(r"[?&]([A-Za-z_][A-Za-z0-9_.-]*)=([^\s&'\"<>#]+)")


def scan_redirect_body(body: bytes, kept: set[str]) -> list[tuple[str, str, str]]:
    """A credential parameter in the URL a redirect's body repeats: the recording keeps a body as the site sent
    it, though its Location is masked. Redirects only: a page's links and scripts are the site's words."""
    text = body.decode("utf-8", errors="replace")
    return [(f"redirect body parameter {name}", CREDENTIAL_PARAMETER, value.rstrip(ENDS))
            for name, value in _QUERY_PARAM.findall(text)
            if _unmasked_credential(name, value.rstrip(ENDS), kept)]


def scan_body(headers: list[tuple[str, str]], body: bytes, kept: set[str]) -> list[tuple[str, str, str]]:
    text = body.decode("utf-8", errors="replace")
    found = [("request body", "an e-mail address", m.group(0)) for m in EMAIL.finditer(text)]
    found += [("request body", "a bearer token", m.group(1)) for m in BEARER.finditer(text)
              if m.group(1) != PLACEHOLDER]
    kind = next((v for k, v in headers if k.lower() == "content-type"), "")
    if kind.lower().startswith(FORM):
        found += [(f"request body parameter {name}", CREDENTIAL_PARAMETER, value)
                  for name, value in parse_qsl(text, keep_blank_values=True)
                  if _unmasked_credential(name, value, kept)]
    return found


def scan_reference(path: str, kept: set[str]) -> list[Suspect]:
    """The reference records beside a WARC (`x.reference.json`, what a design stored): a credential parameter
    not masked in a URL-shaped key or field value, and a bearer token. Only those: a record's own IDs and
    hashes are the site's data, not secrets. Numbers are the reference's records, 1-based; the key is
    shown as a URL is. A damaged file raises ValueError (one line)."""
    try:
        with open(path, encoding="utf-8") as src:
            records = [(str(r["key"]), {str(k): str(v) for k, v in r["fields"].items()})
                       for r in json.load(src)["records"]]
    except OSError as error:
        raise ValueError(f"cannot read the reference records {path}: {error.strerror}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"the reference records {path} are damaged ({type(error).__name__})") from None
    suspects = []
    for number, (key, fields) in enumerate(records, start=1):
        found = []
        for where, text in [("key", key), *((f"field {name}", value) for name, value in fields.items())]:
            for url in URL_IN_TEXT.findall(text):
                found += [(f"{where}, {place}", what, value) for place, what, value in scan_url(url.rstrip(ENDS), kept)
                          if what == CREDENTIAL_PARAMETER]
            found += [(where, "a bearer token", m.group(1)) for m in BEARER.finditer(text) if m.group(1) != PLACEHOLDER]
        shown = shown_url(key, [value for _, _, value in found])
        suspects += [Suspect(number, shown, where, what, hint(value)) for where, what, value in found]
    return suspects


def unredacted_names(path: str) -> set[str]:
    """The names a recording kept on purpose, as its warcinfo record says; none when it has no such record."""
    from warcio.archiveiterator import ArchiveIterator

    try:
        with open(path, "rb") as stream:
            first = next(iter(ArchiveIterator(stream)), None)
            return _kept_in(first) if first is not None and first.rec_type == "warcinfo" else set()
    except Exception:  # unreadable: scan_recording has said so
        return set()


def _kept_in(warcinfo) -> set[str]:
    info = warcinfo.content_stream().read().decode("utf-8", errors="replace")
    kept: set[str] = set()
    for line in info.splitlines():
        field, _, value = line.partition(":")
        if field.strip() == INFO_UNREDACTED:
            kept |= {n.strip().lower() for n in value.split(",") if n.strip()}
    return kept


def scan_recording(path: str) -> list[Suspect]:
    """Every suspect in the WARC at `path`, in file order. An unreadable file raises ValueError (one line)."""
    try:
        from warcio.archiveiterator import ArchiveIterator
    except ImportError:
        raise ValueError("scanning a recording needs warcio: pip install 'killtest[record]'") from None
    suspects: list[Suspect] = []
    kept: set[str] = set()
    try:
        with open(path, "rb") as stream:
            for number, record in enumerate(ArchiveIterator(stream), start=1):
                if record.rec_type == "warcinfo":
                    kept |= _kept_in(record)
                    continue
                url = record.rec_headers.get_header("WARC-Target-URI") or ""
                headers = list(record.http_headers.headers) if record.http_headers else []
                if record.rec_type == "request":
                    found = scan_url(url, kept) + scan_headers("request", headers, kept)
                    found += scan_body(headers, record.content_stream().read(), kept)
                elif record.rec_type in ("response", "revisit"):
                    found = scan_headers("response", headers, kept)
                    for name, target in urls_in_headers(headers):
                        found += [(f"{name} {w}", what, v) for w, what, v in scan_url(target, kept)]
                    if str(record.http_headers.get_statuscode() if record.http_headers else "").startswith("3"):
                        found += scan_redirect_body(record.content_stream().read(), kept)
                else:
                    continue
                shown = shown_url(url, [value for _, _, value in found])
                suspects += [Suspect(number, shown, where, what, hint(value)) for where, what, value in found]
    except OSError as error:
        raise ValueError(f"cannot read the recording {path}: {error.strerror}") from None
    except Exception as error:  # warcio's ArchiveLoadFailed and the like: not a WARC file
        raise ValueError(f"cannot read the recording {path}: not a readable WARC file ({type(error).__name__})"
                         ) from None
    return suspects
