"""A spec's [site] table: the recording a design is kill-tested against, instead of the shop.

    [site]
    recording = "bookshop.warc.gz"        # relative to the spec; `killtest record` writes it
    start_url = "http://books.test/"      # what {base_url} becomes, in the recording and in every replay
    ignore_params = ["sessionid"]         # query parameters left out when a request is matched
    redact_params = ["customer"]          # masked as well as the credential-looking names (below)
    redact_headers = ["X-Client-Id"]      # masked as well as Authorization, Cookie, Set-Cookie, X-Api-Key, ...
    unredacted = ["session"]              # names kept verbatim, one by one (there is no global switch)

The table is read from the spec file itself, so a Design needs no field for it: `site_of(design)`
answers for any design loaded from a spec (None for the shop). The reference records live beside
the recording (killtest.fixture_site.recordings.recorded_site.reference_path).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from killtest.harness.design.model import Design
from killtest.harness.design.spec_toml import SpecFile
from killtest.harness.errors import KilltestError

SITE_KEYS = {
    "recording": "a recorded site (`killtest record` writes it): the WARC file, relative to the spec; the design"
                 " is kill-tested against its replay instead of the shop",
    "start_url": "the URL {base_url} becomes when the site is recorded or replayed (http:// or https://)",
    "ignore_params": "query parameters a replay leaves out when it matches a request with the recording",
    "redact_params": "query (and form-body) parameters masked in the recording besides the default ones: a name"
                     " with a word such as token, key, api_key, password, secret, session or sig (in a redirect's"
                     " Location too); the replay masks them too before matching, so the scraper keeps sending its"
                     " real values",
    "redact_headers": "request or response headers masked in the recording besides Authorization,"
                      " Proxy-Authorization, Cookie, Set-Cookie and the request headers whose name looks like a"
                      " credential (X-Api-Key, X-Auth-Token); for example X-Client-Id",
    "unredacted": "header or parameter names the recording keeps verbatim though they would be masked, one by one"
                  " (no wildcard: nothing turns masking off as a whole)",
}
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-\[\]]*")  # an HTTP token or a query parameter's name, no wildcard


@dataclass(frozen=True)
class SiteSpec:
    """Where a design's recording is, what its start URL is, and which query parameters matching ignores."""

    recording: str  # absolute
    start_url: str
    ignore_params: tuple[str, ...] = ()
    spec_file: str = ""
    redact_params: tuple[str, ...] = ()
    redact_headers: tuple[str, ...] = ()
    unredacted: tuple[str, ...] = ()


def read_site(spec: SpecFile) -> SiteSpec | None:
    """The [site] table of a parsed spec, checked; None when it has none."""
    table = spec.table("site", set(SITE_KEYS), required=False)
    if not table:
        return None
    recording = spec.required_string(table, "site", "recording")
    start_url = spec.required_string(table, "site", "start_url")
    if not start_url.startswith(("http://", "https://")):
        raise spec.error("site", "start_url", f"site.start_url must be an http:// or https:// URL, not {start_url!r}")
    ignore = spec.strings(table, "site", "ignore_params")
    names = {key: spec.strings(table, "site", key) for key in ("redact_params", "redact_headers", "unredacted")}
    for key, listed in names.items():
        for name in listed:
            if not NAME.fullmatch(name):  # "*" or "" would read as "everything": a global opt-out by accident
                raise spec.error("site", key, f"site.{key} takes header or parameter names, one by one, not {name!r}")
    path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(spec.path)), recording))
    return SiteSpec(recording=path, start_url=start_url, ignore_params=ignore, spec_file=os.path.abspath(spec.path),
                    **names)


def site_of(design: Design) -> SiteSpec | None:
    """The recorded site a design names in its spec, or None (the shop)."""
    if not design.spec_file or not os.path.exists(design.spec_file):
        return None
    return read_site(SpecFile(design.spec_file))


def one_site(designs) -> SiteSpec | None:
    """The one recorded site all the designs of a campaign share; None for the shop. Designs of one
    campaign meet the same site, so a recorded design beside a shop design (or another recording) is refused."""
    sites = {d.name: site_of(d) for d in designs}
    recordings = {s.recording for s in sites.values() if s is not None}
    if not recordings:
        return None
    if len(recordings) > 1 or None in sites.values():
        named = ", ".join(f"{name} ({s.recording if s else 'the shop'})" for name, s in sites.items())
        raise KilltestError(f"the designs of one run must meet the same site, and these do not: {named}")
    return next(s for s in sites.values() if s is not None)
