"""Two more places a recorded site's credentials could leak (issue 27, after the first audit): a redirect's
`Location` written into the WARC, and a scraper's own JSON events stored in the history and reports.

The site is a small JSON API on a loopback port, reached as `redirects.test` through the recording
proxy's --resolve. Every page is reached through a redirect that carries the api_key: `/login?api_key=K`
answers 302 to `/list/0?api_key=K` (a relative Location), `/next?page=N&api_key=K` answers 302 to
`http://redirects.test/list/N?api_key=K` (an absolute one). No page's body holds the key. The scraper is
a real `command` design (urllib, which follows redirects and honours HTTP_PROXY); it resumes from its
store and prints a JSON event per page naming the URL it asked for and the URL it landed on.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import pytest

pytest.importorskip("warcio", reason="pip install -e '.[record]'")
# The proxy runs from its own env (mitmproxy at exact pins, ~/.cache/killtest/tools/), built once for the session
# by the `recording_proxy_env` fixture: every test and fixture here that starts a proxy asks for it, and the
# pure ones (matching, masking, the scan) do not, so the fast lane builds nothing.

from killtest.fixture_site.recordings.redaction import PLACEHOLDER, Redaction  # noqa: E402
from killtest.fixture_site.recordings.secret_scan import scan_recording  # noqa: E402
from killtest.harness.campaigns.record_site import record_design  # noqa: E402
from killtest.harness.design.specfile import load_spec  # noqa: E402
from tests.test_recording_secrets import SPEC as CREDENTIALS_SPEC  # noqa: E402
from tests.test_recording_secrets import LoopbackSite, QuietHandler  # noqa: E402

API_KEY = "ak-Rd7Xq2Lm9Vb4Nz1Kc6Wp3Ty8Gh5Js0F"
PAGES = 3

SCRAPER = f'''
import json, os, sys, time, urllib.request
base, store = sys.argv[1].rstrip("/"), sys.argv[2]
opener = urllib.request.build_opener()  # follows a 302 through the same proxy
page = sum(1 for line in open(store) if line.strip()) // 2 if os.path.exists(store) else 0  # resumes by page
while page is not None:
    asked = f"{{base}}/login?api_key={API_KEY}" if page == 0 else f"{{base}}/next?page={{page}}&api_key={API_KEY}"
    answer = opener.open(asked, timeout=20)
    items = json.load(answer)
    with open(store, "a") as out:
        out.write("".join(json.dumps(item) + "\\n" for item in items["items"]))
    print(json.dumps({{"event": "page", "t": time.monotonic(), "asked": asked, "landed": [answer.geturl()],
                      "path": asked[len(base):], "note": "page %d" % page}}), flush=True)
    page = items["next"]
'''

# The credentials test's design, under this site's names.
SPEC = CREDENTIALS_SPEC.replace('"creds"', '"redirects"').replace("creds.", "redirects.")


class RedirectingSite(LoopbackSite):
    """Every page behind a redirect that carries the api_key; 404 without the right key."""

    host = "redirects.test"

    def __init__(self) -> None:
        class Handler(QuietHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                if query.get("api_key") != [API_KEY]:
                    return self._send(404, b"no")
                if url.path == "/login":
                    return self._redirect(f"/list/0?api_key={API_KEY}")
                if url.path == "/next":
                    return self._redirect(f"http://{self.headers['Host']}/list/{query['page'][0]}?api_key={API_KEY}")
                page = int(url.path.rsplit("/", 1)[-1])
                items = [{"sku": f"sku-{page}-{n}", "price": f"{page}.{n}0"} for n in range(2)]
                self._send(200, json.dumps({"items": items, "next": page + 1 if page + 1 < PAGES else None}).encode(),
                           [("Link", f'</next?page={page + 1}&api_key={API_KEY}>; rel="next"'),  # relative URLs
                            ("Refresh", f"300; url=/list/{page}?api_key={API_KEY}")])

            def _redirect(self, location: str) -> None:
                self.send_response(302)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _send(self, status: int, body: bytes, headers: list[tuple[str, str]] = ()) -> None:
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.serve(Handler)


@pytest.fixture(scope="module")
def replayed(recording_proxy_env, tmp_path_factory):
    """The site recorded once, then one run of the replay with a request kill: (recording, reference, results)."""
    folder = tmp_path_factory.mktemp("redirects")
    (folder / "scraper.py").write_text(SCRAPER)
    (folder / "design.toml").write_text(SPEC)
    site = RedirectingSite()
    try:
        made = record_design(load_spec(str(folder / "design.toml")), site.resolve(), False, 60, lambda said: None)
    finally:
        site.stop()
    out = str(folder / "results")
    ran = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", str(folder / "design.toml"),
                          "--schedule", "r3", "--runs", "1", "--out", out, "--no-plot"], capture_output=True,
                         text=True, timeout=180)
    return made, out, ran


@pytest.mark.slow
def test_a_redirects_location_is_masked_in_the_recording_and_still_replays(replayed):
    made, out, ran = replayed
    with open(made.recording, "rb") as src:
        warc = gzip.decompress(src.read())
    with open(made.reference, "rb") as src:
        reference = src.read()
    assert API_KEY.encode() not in warc and API_KEY.encode() not in reference
    assert f"Location: /list/0?api_key={PLACEHOLDER}".encode() in warc  # relative, its shape kept
    assert f"Location: http://redirects.test/list/1?api_key={PLACEHOLDER}".encode() in warc  # absolute
    assert f'Link: </next?page=1&api_key={PLACEHOLDER}>; rel="next"'.encode() in warc  # relative, in other headers
    assert f"Refresh: 300; url=/list/0?api_key={PLACEHOLDER}".encode() in warc
    assert scan_recording(made.recording) == []  # the scan, which reads Location, Link and Refresh, finds nothing
    assert (made.records, made.exchanges) == (2 * PAGES, 2 * PAGES)
    # The replayed redirect names the masked URL; the scraper follows it and the replay answers it.
    with open(os.path.join(out, "killtest.json")) as src:
        verdict = json.load(src)["runs"][0]
    assert (verdict["validity"], verdict["findings"]) == ("valid", []), ran.stdout + ran.stderr
    assert verdict["kills"] == 1 and verdict["correct_records"] == 2 * PAGES


def test_a_response_headers_urls_are_masked_as_a_requests():
    mask = Redaction(unredacted=("session",))
    headers = [("Location", "/list/0?page=2&api_key=k1&session=keep"), ("Content-Location", "http://a.test/x?token=t"),
               ("Link", '<http://a.test/p?page=3&accessToken=t2>; rel="next"'), ("Content-Type", "text/html"),
               ("Location-Hint", "/no/query"), ("Set-Cookie", "sid=9; Path=/"),
               ("Link", '</p?page=4&api_key=k3>; rel="next", </p?page=0>; rel="first"'),
               ("Refresh", "0; url=/x?token=t3&page=1"), ("Cache-Control", "max-age=0")]
    assert mask.response_headers(headers) == [
        ("Location", f"/list/0?page=2&api_key={PLACEHOLDER}&session=keep"),
        ("Content-Location", f"http://a.test/x?token={PLACEHOLDER}"),
        ("Link", f'<http://a.test/p?page=3&accessToken={PLACEHOLDER}>; rel="next"'), ("Content-Type", "text/html"),
        ("Location-Hint", "/no/query"), ("Set-Cookie", f"sid={PLACEHOLDER}; Path=/"),
        ("Link", f'</p?page=4&api_key={PLACEHOLDER}>; rel="next", </p?page=0>; rel="first"'),  # relative: by name
        ("Refresh", f"0; url=/x?token={PLACEHOLDER}&page=1"), ("Cache-Control", "max-age=0")]
    assert mask.response_headers(mask.response_headers(headers)) == mask.response_headers(headers)


def test_a_scrapers_events_have_their_urls_masked_in_the_history_and_reports(replayed):
    """The JSON lines a scraper prints go into the history as scraper_events: on a recorded site the URLs in
    their fields are masked as a stored record's are (URLs only: the checker compares these fields)."""
    made, out, ran = replayed
    written = b"".join(open(os.path.join(root, name), "rb").read() for root, _, names in os.walk(out)
                       for name in names) + (ran.stdout + ran.stderr).encode()
    assert API_KEY.encode() not in written
    with open(os.path.join(out, "history", "killtest-redirects-run1.jsonl")) as src:
        events = [event for event in map(json.loads, src) if event["type"] == "scraper_event"]
    first = next(event for event in events if event["start"] == 0)
    assert first["asked"] == f"http://redirects.test/login?api_key={PLACEHOLDER}"  # the URL it sent: masked
    assert first["landed"] == [f"http://redirects.test/list/0?api_key={PLACEHOLDER}"]  # in a list too
    assert first["path"] == f"/login?api_key={PLACEHOLDER}"  # a path alone, as a design reports its lease's page
    assert (first["name"], first["note"]) == ("page", "page 0")  # what is not a URL is kept as printed
    assert sorted(event["note"] for event in events if event["name"] == "page")[-1] == f"page {PAGES - 1}"


def test_a_url_that_does_not_parse_is_masked_as_text_not_dropped():
    """urlsplit raises on a bracketed host left open: in the recorder's response hook that lost the exchange from
    the WARC, in a scraper's events a traceback. Its name=value pairs are masked as text instead."""
    from killtest.fixture_site.recordings.redaction import PLACEHOLDER, Redaction

    redaction = Redaction()
    assert redaction.url("http://[bad/x?api_key=K&page=2") == f"http://[bad/x?api_key={PLACEHOLDER}&page=2"
    assert redaction.response_headers([("Location", "http://[bad/x?api_key=K"), ("X-Debug", "see http://[x]/y")]) == [
        ("Location", f"http://[bad/x?api_key={PLACEHOLDER}"), ("X-Debug", "see http://[x]/y")]


def test_the_scan_reads_every_url_a_response_header_names_relative_ones_included():
    """What the scan of a recording checks beside Location: each `<...>` of a Link and a Refresh's url=; a
    credential left in one is a suspect, as in a Location."""
    from killtest.fixture_site.recordings.secret_scan import scan_url, urls_in_headers

    headers = [("Link", '</p?api_key=k1>; rel="next", <http://a.test/q?page=2>; rel="last"'),
               ("Refresh", "5; URL='/r?token=t2'"), ("Location", "/l?x=1"), ("Content-Type", "text/html"),
               ("Link", "<http://[bad/x>; rel=next")]
    named = urls_in_headers(headers)
    assert named == [("Link", "?api_key=k1"), ("Link", "?page=2"), ("Refresh", "?token=t2"),
                     ("Location", "/l?x=1")]  # a Link's query alone; an unparsable URL is left out, not a traceback
    hashed = [("Link", "</assets/application-" + "9f" * 32 + '.css>; rel="preload"')]  # Rails 7.1 sends these
    assert [found for _, url in urls_in_headers(hashed) for found in scan_url(url, set())] == []
    found = [(name, where, value) for name, url in named for where, _, value in scan_url(url, set())]
    assert found == [("Link", "URL parameter api_key", "k1"), ("Refresh", "URL parameter token", "t2")]


def test_the_scan_names_a_credential_in_the_url_a_redirects_body_repeats():
    """A recording keeps a body as the site sent it: a 302's `Redirecting to /p?api_key=...` (Express, Werkzeug)
    holds the key though its Location is masked, and check-recording says so. Redirects' bodies only (a page's
    links and scripts are the site's words), and a credential in a scraper's error is masked whole."""
    from killtest.fixture_site.recordings.secret_scan import CREDENTIAL_PARAMETER, scan_redirect_body

    body = b"Found. Redirecting to /list/0?page=1&api_key=k1. See /p?x=1&token=t2#top"
    assert scan_redirect_body(body, set()) == [("redirect body parameter api_key", CREDENTIAL_PARAMETER, "k1"),
                                               ("redirect body parameter token", CREDENTIAL_PARAMETER, "t2")]
    assert scan_redirect_body(body, {"api_key", "token"}) == []  # kept by name
    assert scan_redirect_body(body.replace(b"k1", PLACEHOLDER.encode()).replace(b"t2", PLACEHOLDER.encode()),
                              set()) == []
    assert Redaction().text("login failed: password=p?ss<w>0rd") == f"login failed: password={PLACEHOLDER}"


def test_a_credential_in_a_urls_fragment_is_masked_and_scanned_as_a_querys():
    """An OAuth redirect names its token in the fragment (`Location: .../cb#access_token=...`): masked by name as
    a query's parameters are, and a suspect of the scan while it is not. A fragment that is not pairs stays."""
    from killtest.fixture_site.recordings.secret_scan import scan_url

    redaction = Redaction()
    location = "https://app.test/cb?state=s1#access_token=tok-1&expires_in=3600"
    assert redaction.url(location) == f"https://app.test/cb?state=s1#access_token={PLACEHOLDER}&expires_in=3600"
    assert redaction.url(redaction.url(location)) == redaction.url(location)
    assert redaction.url("/p?page=1#section-2") == "/p?page=1#section-2"
    assert scan_url(location, set()) == [("URL fragment parameter access_token", "a credential parameter, not masked",
                                          "tok-1")]
    assert scan_url(redaction.url(location), set()) == []
