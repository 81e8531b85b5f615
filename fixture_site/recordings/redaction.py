"""What a recording never holds: credentials, masked by the recording proxy before anything reaches the disk.

By default (issue 27; VCR.py's `filter_headers` / `filter_query_parameters` do the same for cassettes):
- request headers Authorization, Proxy-Authorization and Cookie, and the response's Set-Cookie;
- in a response's Location (a redirect) and Content-Location, each target of a Link and a Refresh's url=
  (relative or not), and any absolute URL in its other headers, the query parameters masked in a request's URL;
- request headers whose name looks like a credential (X-Api-Key, X-Auth-Token, X-Session-Id), as
  parameters' names are read below;
- query parameters whose name looks like a credential: one of its words (`api_key` is api + key,
  `X-Amz-Signature` is x + amz + signature, `accessToken` is access + token) is in CREDENTIAL_WORDS;
- the same parameters in a form-encoded request body (`password=...` in a login POST).

A value is replaced by PLACEHOLDER; what tells a reader what was there (a cookie's name and
attributes, an Authorization scheme) is kept. A spec's [site] table adds names (`redact_params`,
`redact_headers`) and takes some back (`unredacted`), one name at a time: there is no switch
that turns the whole of it off.

Masking is idempotent, and the replay masks a request the same way before matching it, so the
scraper goes on sending its real credentials and still gets the recorded answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

PLACEHOLDER = "killtest-redacted"
REQUEST_HEADERS = ("authorization", "proxy-authorization", "cookie")
RESPONSE_HEADERS = ("set-cookie",)
URL_HEADERS = ("location", "content-location")  # a response header whose whole value is a URL, maybe relative
CREDENTIAL_WORDS = frozenset({
    "token", "key", "apikey", "password", "passwd", "pwd", "pass", "secret", "session", "sessionid", "sid", "sig",
    "signature", "auth", "credential", "credentials", "jwt", "otp"})
FORM = "application/x-www-form-urlencoded"
# What Redaction.text looks for in free text (a scraper's stderr): a URL (less the punctuation that ends a
# sentence), `Name: value` or `'Name': 'value'` to the end of the line or quote, an Authorization scheme's
# credentials, and `name=value`.
URL_IN_TEXT = re.compile(r"https?://[^\s'\"<>]+")
HEADER_IN_TEXT = re.compile(r"\b([A-Za-z][A-Za-z0-9-]*)(['\"]?\s*:\s*['\"]?)([^'\"\r\n]+)")
SCHEME_IN_TEXT = re.compile(r"\b(Bearer|Basic)(\s+)([A-Za-z0-9._~+/=-]+)", re.IGNORECASE)
ENDS = ".,;:!?)]}"  # what may close a sentence or a bracket after a URL or a value
PARAM_IN_TEXT = re.compile(r"(?<![\w.-])([A-Za-z_][A-Za-z0-9_.-]*)=([^\s&'\";,=(]+)")
# The URLs, maybe relative, in a Link header (each `<...>`) and in a Refresh header (`url=...`).
LINK_TARGET = re.compile(r"<([^>]*)>")
REFRESH_TARGET = re.compile(r"(url\s*=\s*['\"]?)([^'\"\s;]+)", re.IGNORECASE)


def words_of(name: str) -> list[str]:
    """`api_key` -> [api, key]; `accessToken` -> [access, token]; `X-Amz-Signature` -> [x, amz, signature]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def looks_like_credential(name: str) -> bool:
    return any(word in CREDENTIAL_WORDS for word in words_of(name))


@dataclass(frozen=True)
class Redaction:
    """The names masked: the defaults, plus a spec's `redact_params` / `redact_headers`, less its `unredacted`."""

    params: tuple[str, ...] = ()  # beyond the credential-looking names
    headers: tuple[str, ...] = ()  # beyond REQUEST_HEADERS and RESPONSE_HEADERS
    unredacted: tuple[str, ...] = ()  # header or parameter names the user keeps, one by one

    def param(self, name: str) -> bool:
        lower = name.lower()
        if lower in self._kept:
            return False
        return lower in {p.lower() for p in self.params} or looks_like_credential(name)

    def header(self, name: str, response: bool = False) -> bool:
        lower = name.lower()
        if lower in self._kept:
            return False
        if not response and looks_like_credential(name):  # X-Api-Key, X-Auth-Token: what the scan calls credentials
            return True  # (safe for the replay: a request is matched by its method and URL, never its headers)
        defaults = RESPONSE_HEADERS if response else REQUEST_HEADERS
        return lower in defaults or lower in {h.lower() for h in self.headers}

    @property
    def _kept(self) -> set[str]:
        return {n.lower() for n in self.unredacted}

    def url(self, url: str) -> str:
        """The URL with the value of every masked query parameter replaced, and of every such `name=value` of
        its fragment (an OAuth redirect's `#access_token=...`); the others keep their order and text.
        A URL that does not parse (`http://[bad/x?api_key=...`) gets its `name=value` pairs masked as text."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return self._params_in_text(url)
        query, fragment = self._masked_pairs(parts.query), self._masked_pairs(parts.fragment)
        if (query, fragment) == (parts.query, parts.fragment):
            return url  # untouched, byte for byte: no re-encoding of a query that holds nothing to mask
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, fragment))

    def _masked_pairs(self, text: str) -> str:
        """`a=1&api_key=<p>` for a query or a fragment holding a masked name; the text itself otherwise."""
        if "=" not in text:
            return text
        pairs = parse_qsl(text, keep_blank_values=True)
        if not any(self.param(k) for k, _ in pairs):
            return text
        return urlencode([(k, PLACEHOLDER if self.param(k) else v) for k, v in pairs])

    def urls(self, text: str) -> str:
        """Text with every http(s) URL in it through url() (the punctuation that ends a sentence kept out):
        what a stored record's keys and values get on a recorded site, so its reference holds no credential."""
        def url(match: re.Match) -> str:
            whole = match.group(0)
            core = whole.rstrip(ENDS)
            return self.url(core) + whole[len(core):]

        return URL_IN_TEXT.sub(url, text) if "://" in text else text

    def text(self, text: str) -> str:
        """Free text (a scraper's stderr, quoted into the history and reports) with its credentials masked: each
        URL's through url(), the values of the headers masked by name (`Cookie: a=<p>`; a name that only looks
        like a credential must hold a dash, so `KeyError: 'sku'` stays), `Bearer <p>`, `Basic <p>`, and
        `name=<p>` for each parameter masked by name. Idempotent, as the rest."""
        def header(match: re.Match) -> str:
            name, lower = match.group(1), match.group(1).lower()
            named = lower in REQUEST_HEADERS + RESPONSE_HEADERS or lower in {h.lower() for h in self.headers}
            if lower in self._kept or not (named or ("-" in name and looks_like_credential(name))):
                return match.group(0)
            return name + match.group(2) + masked_value(name, match.group(3))

        text = HEADER_IN_TEXT.sub(header, self.urls(text))
        text = SCHEME_IN_TEXT.sub(lambda m: f"{m.group(1)}{m.group(2)}{PLACEHOLDER}", text)
        return self._params_in_text(text)

    def _params_in_text(self, text: str) -> str:
        """`name=<p>` for each parameter masked by name, wherever it stands in the text."""
        def param(match: re.Match) -> str:
            value = match.group(2)
            ends = value[len(value.rstrip(ENDS)):]
            return f"{match.group(1)}={PLACEHOLDER}{ends}" if self.param(match.group(1)) else match.group(0)

        return PARAM_IN_TEXT.sub(param, text)

    def request_headers(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return [(k, masked_value(k, v) if self.header(k) else v) for k, v in headers]

    def response_headers(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Set-Cookie and the named headers masked; a redirect's Location (and Content-Location) through url(),
        relative or not, and every absolute URL in another header (a `Link: <...?api_key=...>; rel=next`) through
        urls(); each target of a Link and a Refresh's url=, relative or not, through url() (`</p?api_key=...>`,
        `0; url=/p?token=...`). The replayed redirect then names the masked URL: the scraper follows it,
        and the replay, which masks each request before matching it, answers it as the recorded one."""
        def masked(name: str, value: str) -> str:
            if self.header(name, response=True):
                return masked_value(name, value)
            lower = name.lower()
            if lower in URL_HEADERS:
                return self.url(value)
            if lower == "link":  # each target, relative or not: `</p?api_key=...>; rel=next`
                return LINK_TARGET.sub(lambda m: f"<{self.url(m.group(1))}>", value)
            if lower == "refresh":  # `0; url=/p?token=...`
                return REFRESH_TARGET.sub(lambda m: m.group(1) + self.url(m.group(2)), value)
            return self.urls(value)

        return [(k, masked(k, v)) for k, v in headers]

    def body(self, headers: list[tuple[str, str]], body: bytes) -> bytes:
        """A form-encoded request body with its credential parameters masked; any other body as it is."""
        kind = next((v for k, v in headers if k.lower() == "content-type"), "")
        if not kind.lower().startswith(FORM) or not body:
            return body
        try:
            pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=True)
        except (UnicodeDecodeError, ValueError):
            return body
        if not any(self.param(k) for k, _ in pairs):
            return body
        return urlencode([(k, PLACEHOLDER if self.param(k) else v) for k, v in pairs]).encode()

    def as_args(self) -> list[str]:
        """The proxy process's command-line words for this redaction (killtest.fixture_site.recordings.replay_proxy)."""
        return [f"--{flag}={name}" for flag, names in (("redact-param", self.params), ("redact-header", self.headers),
                                                        ("unredacted", self.unredacted)) for name in names]


DEFAULT_REDACTION = Redaction()


def masked_value(header: str, value: str) -> str:
    """A header value with its secret parts replaced, its shape kept: `Bearer <p>`, `sid=<p>; Path=/`, `a=<p>; b=<p>`.
    """
    name = header.lower()
    if name == "set-cookie":
        cookie, sep, attributes = value.partition(";")
        cookie_name, eq, _ = cookie.partition("=")
        return f"{cookie_name}={PLACEHOLDER}{sep}{attributes}" if eq else PLACEHOLDER
    if name == "cookie":
        return "; ".join(f"{part.partition('=')[0].strip()}={PLACEHOLDER}" if "=" in part else PLACEHOLDER
                         for part in value.split(";") if part.strip())
    scheme, space, _ = value.strip().partition(" ")
    if name in ("authorization", "proxy-authorization") and space and scheme.isalpha():
        return f"{scheme} {PLACEHOLDER}"
    return PLACEHOLDER
