"""Recordings a user can commit (issue 27): no credential reaches the WARC, a scan finds what masking missed,
re-recording says what went stale, and identical payloads are stored once.

The site is a small JSON API on a loopback port, reached as `creds.test` through the recording proxy's
--resolve; it answers only a request that carries the bearer token, the session cookie and the api_key
parameter. The scraper is a real `command` design: a Python program in the test's folder, using urllib
(which honours HTTP_PROXY), sending the three credentials on every request.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import random
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

pytest.importorskip("warcio", reason="pip install -e '.[record]'")
# The proxy runs from its own env (mitmproxy at exact pins, ~/.cache/killtest/tools/), built once for the session
# by the `recording_proxy_env` fixture: every test and fixture here that starts a proxy asks for it, and the
# pure ones (matching, masking, the scan) do not, so the fast lane builds nothing.

from warcio.archiveiterator import ArchiveIterator  # noqa: E402
from warcio.warcwriter import WARCWriter  # noqa: E402

from killtest.fixture_site.recordings.recorded_site import write_exchange, write_reference  # noqa: E402
from killtest.fixture_site.recordings.redaction import PLACEHOLDER, Redaction  # noqa: E402
from killtest.fixture_site.recordings.secret_scan import scan_recording, scan_reference  # noqa: E402
from killtest.harness.campaigns.record_site import record_design  # noqa: E402
from killtest.harness.design.specfile import load_spec  # noqa: E402
from killtest.harness.errors import KilltestError  # noqa: E402

TOKEN = "sk-live-Q7f3KpX9wM2zR8vT4nB6yJ1cD5hL0gA"
SESSION = "sess-8Hq2Lz5Wn0Rt3Yx6Vb9Kc4Mf7Pd1Sg"
API_KEY = "ak-4Tz9Qw2Er7Ty1Ui6Op3As8Df5Gh0Jk"
SET_SESSION = "srv-9Zx8Cv7Bn6Mm5Ll4Kk3Jj2Hh1Gg0Ff"
KEY_HEADER = "xk-2Vb8Nm4Qw7Er1Ty5Ui9Op3As6Df0Gh"  # sent as X-Api-Key, a header no default list names
AUTH_HEADER = "xa-6Hj1Kl9Zx3Cv7Bn2Mq5Wr8Et4Yu0Io"  # sent as X-Auth-Token
# 20 KB the same on every page (a logo, fetched under another URL each time); random, so gzip cannot shrink it
ASSET = random.Random(27).randbytes(20_000)

SCRAPER = f'''
import json, sys, urllib.request
base, store = sys.argv[1].rstrip("/"), sys.argv[2]
opener = urllib.request.build_opener()  # ProxyHandler reads HTTP_PROXY from the environment
headers = {{"Authorization": "Bearer {TOKEN}", "Cookie": "session={SESSION}", "X-Api-Key": "{KEY_HEADER}",
           "X-Auth-Token": "{AUTH_HEADER}"}}
page, pages = 0, int(open(sys.argv[3]).read()) if len(sys.argv) > 3 else None
while page is not None:
    ask = urllib.request.Request(f"{{base}}/items?page={{page}}&api_key={API_KEY}", headers=headers)
    answer = json.load(opener.open(ask, timeout=20))
    opener.open(urllib.request.Request(f"{{base}}/static/logo.png?v={{page}}", headers=headers), timeout=20).read()
    with open(store, "a") as out:
        for item in answer["items"]:
            out.write(json.dumps(item) + "\\n")
    page = answer["next"]
'''

SPEC = '''[design]
name = "creds"
command = ["{python}", "{spec_dir}/scraper.py", "{base_url}", "{store}"]

[store]
kind = "jsonl"
path = "{work_dir}/items.jsonl"
key = "sku"
fields = { price = "price" }

[site]
recording = "creds.warc.gz"
start_url = "http://creds.test/"
'''


class QuietHandler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no line on stderr per request
        pass


class LoopbackSite:
    """A test site on a loopback port of its own, reached under `host` through the recording proxy's --resolve."""

    host = ""

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def resolve(self) -> list[str]:
        return [f"{self.host}:80=127.0.0.1:{self.server.server_address[1]}"]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class CredentialSite(LoopbackSite):
    """The JSON API: `pages` pages of 3 items; 401 unless all three credentials come with the request."""

    host = "creds.test"

    def __init__(self, pages: int = 3, prices: dict[str, str] | None = None) -> None:
        self.pages, self.prices = pages, prices or {}
        site = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                if (self.headers.get("Authorization") != f"Bearer {TOKEN}"
                        or self.headers.get("Cookie") != f"session={SESSION}"):
                    return self._send(401, b"no", "text/plain")
                if url.path.startswith("/static/"):
                    return self._send(200, ASSET, "image/png")
                if url.path != "/items" or query.get("api_key") != [API_KEY]:
                    return self._send(404, b"no", "text/plain")
                page = int(query["page"][0])
                items = [{"sku": f"sku-{page}-{n}", "price": site.prices.get(f"sku-{page}-{n}", f"{page}.{n}0")}
                         for n in range(3)]
                body = json.dumps({"items": items, "next": page + 1 if page + 1 < site.pages else None}).encode()
                self._send(200, body, "application/json")

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Set-Cookie", f"session={SET_SESSION}; Path=/; HttpOnly")
                self.end_headers()
                self.wfile.write(body)

        self.serve(Handler)


def _design_folder(folder) -> str:
    (folder / "scraper.py").write_text(SCRAPER)
    (folder / "design.toml").write_text(SPEC)
    return str(folder / "design.toml")


def _record(spec: str, site: CredentialSite, messages: list[str] | None = None):
    return record_design(load_spec(spec), site.resolve(), False, 60,
                         (messages.append if messages is not None else lambda message: None))


def _every_byte(path: str) -> bytes:
    """The WARC's bytes, its gzip members decompressed: what a grep of the unpacked file would read."""
    with open(path, "rb") as src:
        return gzip.decompress(src.read())


@pytest.fixture(scope="module")
def recorded(recording_proxy_env, tmp_path_factory):
    folder = tmp_path_factory.mktemp("creds")
    spec = _design_folder(folder)
    site = CredentialSite()
    try:
        made = _record(spec, site)
    finally:
        site.stop()
    return spec, made


@pytest.mark.slow
def test_no_credential_reaches_the_warc_or_the_reference(recorded):
    spec, made = recorded
    warc, reference = _every_byte(made.recording), open(made.reference, "rb").read()
    for secret in (TOKEN, SESSION, API_KEY, SET_SESSION, KEY_HEADER, AUTH_HEADER):
        assert secret.encode() not in warc and secret.encode() not in reference, secret
    # Their places are masked, their shape kept, and the exchanges are all there.
    assert f"Authorization: Bearer {PLACEHOLDER}".encode() in warc
    assert f"Cookie: session={PLACEHOLDER}".encode() in warc
    assert f"session={PLACEHOLDER}; Path=/; HttpOnly".encode() in warc
    assert f"api_key={PLACEHOLDER}".encode() in warc
    assert f"X-Api-Key: {PLACEHOLDER}".encode() in warc and f"X-Auth-Token: {PLACEHOLDER}".encode() in warc
    assert made.records == 9 and made.exchanges == 6
    assert scan_recording(made.recording) == []


@pytest.mark.slow
def test_the_replay_answers_the_scraper_that_sends_its_real_credentials(recorded, tmp_path):
    spec, made = recorded
    out = str(tmp_path / "results")
    finished = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", spec, "--schedule", "r3",
                               "--runs", "1", "--out", out, "--no-plot"], capture_output=True, text=True, timeout=180)
    with open(os.path.join(out, "killtest.json")) as src:
        verdict = json.load(src)["runs"][0]
    assert "unrecorded_request" not in verdict["findings"], finished.stdout + finished.stderr
    assert verdict["kills"] == 1 and verdict["correct_records"] == 9
    written = _every_file(out)  # the history (its request log), the reports
    assert f"api_key={PLACEHOLDER}".encode() in written  # the requests are logged, their credentials masked
    for secret in (TOKEN, SESSION, API_KEY, KEY_HEADER, AUTH_HEADER):
        assert secret.encode() not in written


def _every_file(folder: str) -> bytes:
    return b"".join(open(os.path.join(root, name), "rb").read() for root, _, names in os.walk(folder)
                    for name in names)


def test_identical_payloads_are_stored_once_and_replayed_from_the_first(recorded):
    spec, made = recorded
    with open(made.recording, "rb") as src:
        types = [record.rec_type for record in ArchiveIterator(src)]
    assert types.count("revisit") == 2 and types.count("response") == 4  # the logo is stored once of three
    assert made.warc_bytes < 2 * len(ASSET)  # three copies would not fit: the asset does not compress
    from killtest.fixture_site.recordings.recorded_site import read_exchanges

    logos = [e for k, e in read_exchanges(made.recording).items() if "/static/logo.png" in k]
    assert len(logos) == 3 and all(e.body == ASSET and e.status == 200 for e in logos)


def _planted(path: str) -> None:
    """A recording that holds one secret of every kind the scan looks for, written without masking."""
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        write_exchange(writer, "http://x.test/a", "GET", [("Authorization", "Basic dXNlcjpodW50ZXIy")], b"",
                       200, "OK", [("Set-Cookie", "sid=abc123; Path=/")], b"a")
        write_exchange(writer, "http://x.test/b?api_key=live-key&page=2", "GET",
                       [("X-Forward", "Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig")], b"", 200, "OK", [], b"b")
        write_exchange(writer, "http://x.test/c/9fK2mQ7xW4zR8vT1nB6yJ3cD5hL0gA2e", "GET",
                       [("X-Client", "Zq8Lw3Rt6Yx9Vb2Kc5Mf8Pd1Sg4Hj7Nm")], b"", 200, "OK", [], b"c")
        write_exchange(writer, "http://x.test/login", "POST", [("Content-Type", "application/json")],
                       b'{"user": "jane.doe@example.com"}', 200, "OK", [], b"d")
        write_exchange(writer, "http://x.test/book/a-light-in-the-attic_1000/index.html", "GET",
                       [("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36"),
                        ("Cookie", f"sid={PLACEHOLDER}")], b"", 200, "OK",
                       [("ETag", '"5d41402abc4b2a76b9719d911017c592aa"')], b"clean")


@pytest.mark.slow
def test_record_with_out_writes_its_report_and_counts_exchanges_not_urls(recording_proxy_env, tmp_path):
    spec = _design_folder(tmp_path)
    site, out = CredentialSite(), tmp_path / "out"
    try:
        done = subprocess.run([sys.executable, "-m", "killtest", "record", "--design", spec, "--resolve",
                               *site.resolve(), "--out", str(out)], capture_output=True, text=True, timeout=180)
    finally:
        site.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "record.json").read_text())
    assert report["warc_bytes"] == os.path.getsize(tmp_path / "creds.warc.gz") and report["suspects"] == []
    assert (report["exchanges"], report["pages"], report["revisits"], report["records"]) == (6, 6, 2, 9)
    assert "| revisit records | 2 " in (out / "record.md").read_text()
    assert "recorded 6 exchanges (6 distinct requests; 2 answers kept as revisit records" in done.stderr


def test_the_scan_finds_a_planted_secret_of_every_kind(tmp_path):
    path = str(tmp_path / "planted.warc.gz")
    _planted(path)
    found = {(s.record, s.where, s.what) for s in scan_recording(path)}
    assert found == {
        (1, "request header Authorization", "a credential header, not masked"),
        (2, "response header Set-Cookie", "a credential header, not masked"),
        (3, "URL parameter api_key", "a credential parameter, not masked"),
        (3, "request header X-Forward", "a bearer token"),
        (5, "URL path", "a long random string"),
        (5, "request header X-Client", "a long random string"),
        (7, "request body", "an e-mail address")}  # record 9 (a slug, a browser's name, an ETag) is clean
    out = tmp_path / "out"
    shown = subprocess.run([sys.executable, "-m", "killtest", "check-recording", path, "--out", str(out)],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 1 and len(shown.stdout.strip().splitlines() + shown.stderr.strip().splitlines()) == 9
    report = json.loads((out / "check-recording.json").read_text())  # the suspects as CI keeps them: hinted too
    assert {(s["file"], s["record"], s["where"]) for s in report["suspects"]} == {(path, r, w) for r, w, _ in found}
    # A suspect is hinted at, never printed whole: neither on its own nor in the URL a line names (CI logs keep it).
    for secret in ("dXNlcjpodW50ZXIy", "abc123", "live-key", "eyJhbGciOiJIUzI1NiJ9.e30.sig",
                   "9fK2mQ7xW4zR8vT1nB6yJ3cD5hL0gA2e", "Zq8Lw3Rt6Yx9Vb2Kc5Mf8Pd1Sg4Hj7Nm", "jane.doe@example.com"):
        assert secret not in shown.stdout + shown.stderr + json.dumps(report), secret
    assert "record 3 (http://x.test/b?api_key=<live... 8 chars>&page=2): URL parameter api_key" in (
        shown.stdout + shown.stderr)
    assert "record 7 (http://x.test/login): request body: an e-mail address (jane... 20 chars)" in (
        shown.stdout + shown.stderr)


def test_a_name_kept_unredacted_is_still_scanned_by_what_its_value_looks_like(tmp_path):
    """`unredacted` spares a name from being a suspect by its name, not its value from the scan."""
    path = str(tmp_path / "kept.warc.gz")
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        writer.write_record(writer.create_warcinfo_record("kept.warc.gz", {
            "killtest-unredacted": "Cookie, session, sort_key, X-Trace"}))
        write_exchange(writer, "http://x.test/p?sort_key=price&session=Q7f3KpX9wM2zR8vT4nB6yJ1cD5hL0gAx", "GET",
                       [("Cookie", "theme=dark"), ("X-Trace", "Zq8Lw3Rt6Yx9Vb2Kc5Mf8Pd1Sg4Hj7Nm")], b"", 200, "OK",
                       [], b"p")
        write_exchange(writer, "http://x.test/q", "GET", [("Cookie", "session=Mn3Bv8Cx1Za6Sd4Fg9Hj2Kl7Qw5Er0Ty")],
                       b"", 200, "OK", [], b"q")
    found = {(s.record, s.where, s.what) for s in scan_recording(path)}
    kept = ", in a name kept by [site] unredacted"
    assert found == {(2, "URL parameter session", "a long random string" + kept),
                     (2, "request header X-Trace", "a long random string" + kept),
                     (4, "request header Cookie", "a long random string" + kept)}  # sort_key=price, theme=dark: no


def test_the_scan_reads_the_reference_beside_the_recording_too(recorded, tmp_path):
    """A design that stores URLs puts whatever they carry into the reference: check-recording scans it."""
    spec, made = recorded
    warc = tmp_path / "copy.warc.gz"
    warc.write_bytes(open(made.recording, "rb").read())
    write_reference(str(warc), "http://creds.test/", 6, {
        f"http://creds.test/item/1?api_key={API_KEY}": {"price": "1.00", "auth": f"Bearer {TOKEN}"},
        "sku-0-1": {"price": "0.10", "image": "http://creds.test/img/5d41402abc4b2a76b9719d911017c592.png"}})
    shown = subprocess.run([sys.executable, "-m", "killtest", "check-recording", str(warc), "--out",
                            str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    said = shown.stdout + shown.stderr
    assert shown.returncode == 1, said
    lines = [line for line in said.splitlines() if "copy.reference.json: record" in line]
    assert [line.split(": ", 2)[2] for line in lines] == [
        f"key, URL parameter api_key: a credential parameter, not masked (ak-4... {len(API_KEY)} chars)",
        f"field auth: a bearer token (sk-l... {len(TOKEN)} chars)"]  # a record's image hash is the site's data
    assert f"http://creds.test/item/1?api_key=<ak-4... {len(API_KEY)} chars>" in lines[0]
    report = (tmp_path / "out" / "check-recording.json").read_text()
    assert json.loads(report)["scanned"] == [str(warc), str(tmp_path / "copy.reference.json")]
    assert API_KEY not in said + report and TOKEN not in said + report


@pytest.mark.slow
def test_a_clean_recording_passes_and_a_bad_file_is_one_line(recorded, tmp_path):
    spec, made = recorded
    clean = subprocess.run([sys.executable, "-m", "killtest", "check-recording", made.recording],
                           capture_output=True, text=True, timeout=60)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    junk = tmp_path / "junk.warc.gz"
    junk.write_bytes(b"not a warc")
    bad = subprocess.run([sys.executable, "-m", "killtest", "check-recording", str(junk)], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines() + bad.stdout.strip().splitlines()) == 1
    assert "Traceback" not in bad.stderr


def test_masking_keeps_shape_and_is_idempotent():
    mask = Redaction(params=("customer",), headers=("X-Api-Key",), unredacted=("session",))
    url = "http://a.test/p?page=2&accessToken=t1&X-Amz-Signature=s&customer=c&session=keep&keyword=k"
    assert mask.url(url) == (f"http://a.test/p?page=2&accessToken={PLACEHOLDER}&X-Amz-Signature={PLACEHOLDER}"
                             f"&customer={PLACEHOLDER}&session=keep&keyword=k")
    assert mask.url(mask.url(url)) == mask.url(url) and mask.url("http://a.test/p?q=a%20b") == "http://a.test/p?q=a%20b"
    assert mask.request_headers([("X-Api-Key", "k"), ("Cookie", "a=1; b=2"), ("Accept", "*/*")]) == [
        ("X-Api-Key", PLACEHOLDER), ("Cookie", f"a={PLACEHOLDER}; b={PLACEHOLDER}"), ("Accept", "*/*")]
    assert mask.body([("Content-Type", "application/x-www-form-urlencoded")], b"user=jane&password=hunter2") == (
        f"user=jane&password={PLACEHOLDER}".encode())
    said = {"HTTPError: 404 (http://a.test/p?page=2&token=t1).":
            f"HTTPError: 404 (http://a.test/p?page=2&token={PLACEHOLDER}).",
            "{'X-Auth-Token': 'xa-1', 'Accept': '*/*'}": f"{{'X-Auth-Token': '{PLACEHOLDER}', 'Accept': '*/*'}}",
            "Authorization: Basic dXNlcjpw": f"Authorization: Basic {PLACEHOLDER}",
            "Set-Cookie: sid=9; Path=/": f"Set-Cookie: sid={PLACEHOLDER}; Path=/",
            "posted password=hunter2&session=keep": f"posted password={PLACEHOLDER}&session=keep",
            "KeyError: 'sku'": "KeyError: 'sku'", "ValueError: bad price 12.50": "ValueError: bad price 12.50"}
    assert {line: mask.text(line) for line in said} == said
    assert all(mask.text(masked) == masked for masked in said.values())


def test_a_wildcard_opt_out_is_refused_in_one_line(tmp_path):
    spec = tmp_path / "design.toml"
    spec.write_text(SPEC + 'unredacted = ["*"]\n')
    with pytest.raises(KilltestError, match=r"design.toml:\d+: site.unredacted takes header or parameter names"):
        load_spec(str(spec))


@pytest.mark.slow
def test_recording_again_says_what_went_stale_and_keeps_the_old_files_until_done(recording_proxy_env, tmp_path):
    spec = _design_folder(tmp_path)
    site = CredentialSite(pages=2)
    try:
        first = _record(spec, site)
    finally:
        site.stop()
    before = {path: open(path, "rb").read() for path in (first.recording, first.reference)}
    # The live site down: the new recording fails, the old one is untouched and no partial file is left.
    with pytest.raises(KilltestError):
        record_design(load_spec(spec), ["creds.test:80=127.0.0.1:9"], False, 30)
    assert {path: open(path, "rb").read() for path in before} == before
    assert sorted(os.listdir(tmp_path)) == ["creds.reference.json", "creds.warc.gz", "design.toml", "scraper.py"]
    # The site grew a page and changed a price: both are said before the old files go.
    site, messages = CredentialSite(pages=3, prices={"sku-1-2": "99.00"}), []
    try:
        second = _record(spec, site, messages)
    finally:
        site.stop()
    changes = second.changes
    assert changes is not None
    assert changes.records_added == ("sku-2-0", "sku-2-1", "sku-2-2") and changes.records_changed == ("sku-1-2",)
    assert changes.records_removed == () and changes.pages_removed == ()
    assert "GET http://creds.test/items?page=2&api_key=" + PLACEHOLDER in changes.pages_added
    assert any(k.startswith("GET http://creds.test/items?page=1") for k in changes.pages_changed)
    said = "\n".join(messages)
    assert "reference records: 3 added (sku-2-0, sku-2-1, sku-2-2), 0 removed, 1 changed (sku-1-2)" in said
    assert open(second.recording, "rb").read() != before[first.recording]


@pytest.mark.slow
def test_a_replay_asking_for_urls_the_recording_lacks_says_it_may_be_stale(recorded, tmp_path):
    spec, made = recorded
    with open(os.path.join(os.path.dirname(spec), "scraper.py")) as src:
        grown = src.read().replace('page = answer["next"]',
                                   'page = answer["next"] if page < 1 else page + 1 if page < 3 else None')
    folder = tmp_path / "grown"
    folder.mkdir()
    (folder / "scraper.py").write_text(grown)
    (folder / "design.toml").write_text(SPEC.replace('"creds.warc.gz"', json.dumps(made.recording)))
    out = str(tmp_path / "results")
    subprocess.run([sys.executable, "-m", "killtest", "run", "--design", str(folder / "design.toml"), "--schedule",
                    "r3", "--runs", "1", "--out", out, "--no-plot"], capture_output=True, text=True, timeout=180)
    with open(os.path.join(out, "killtest.json")) as src:
        verdict = json.load(src)["runs"][0]
    message = json.dumps(verdict)
    assert "unrecorded_request" in verdict["findings"]
    assert "the recording may be stale: re-record" in message and "creds.test/items?page=3" in message


RESUMING = f'''
import json, os, sys, urllib.error, urllib.request
base, store, extra = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3:]
opener = urllib.request.build_opener()
headers = {{"Authorization": "Bearer {TOKEN}", "Cookie": "session={SESSION}"}}
page = sum(1 for line in open(store) if line.strip()) // 3 if os.path.exists(store) else 0  # resumes by page
while page is not None:
    answer = json.load(opener.open(urllib.request.Request(f"{{base}}/items?page={{page}}&api_key={API_KEY}",
                                                          headers=headers), timeout=20))
    opener.open(urllib.request.Request(f"{{base}}/static/logo.png?v={{page}}", headers=headers), timeout=20).read()
    with open(store, "a") as out:
        out.write("".join(json.dumps(item) + "\\n" for item in answer["items"]))
    page = answer["next"]
for path in extra:  # what the live site grew since it was recorded: the replay answers 404
    try:
        opener.open(urllib.request.Request(base + path, headers=headers), timeout=20).read()
    except urllib.error.HTTPError:
        pass
'''


@pytest.mark.slow
def test_urls_a_stale_recording_lacks_make_the_run_unknown_not_over_its_request_bound(recorded, tmp_path):
    """Five requests the replay answered 404 are the recording's staleness, not the design's excess requests."""
    spec, made = recorded
    (tmp_path / "resuming.py").write_text(RESUMING)
    extra = ["/items?page=3&api_key=" + API_KEY, "/items?page=0&sort=price&api_key=" + API_KEY, "/new-arrivals",
             "/items/sku-0-0/reviews", "/search?q=lamp"]
    for name, paths in (("fresh", []), ("stale", extra)):
        (tmp_path / f"{name}.toml").write_text(SPEC.replace('"creds"', f'"{name}"').replace(
            '"{spec_dir}/scraper.py", "{base_url}", "{store}"',
            ", ".join(json.dumps(w) for w in ["{spec_dir}/resuming.py", "{base_url}", "{store}", *paths])).replace(
            '"creds.warc.gz"', json.dumps(made.recording)))
    out = str(tmp_path / "results")
    ran = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", str(tmp_path / "fresh.toml"),
                          "--design", str(tmp_path / "stale.toml"), "--schedule", "r3", "--runs", "1", "--out", out,
                          "--no-plot"], capture_output=True, text=True, timeout=180)
    with open(os.path.join(out, "killtest.json")) as src:
        verdicts = {run["design"]: run for run in json.load(src)["runs"]}
    fresh, stale = verdicts["fresh"], verdicts["stale"]
    # The same scraper without the extra URLs is within its bound: 6 requests uninterrupted + 1 for the kill.
    assert (fresh["validity"], fresh["findings"], fresh["requests"]) == ("valid", [], 7), ran.stdout + ran.stderr
    assert (stale["validity"], stale["findings"], stale["requests"]) == ("unknown", ["unrecorded_request"], 12)
    said = " ".join(stale["problems"])
    assert "5 URLs are not in the recording" in said and "the recording may be stale: re-record" in said
    assert "http://creds.test/new-arrivals" in said and API_KEY not in said
    assert stale["correct_records"] == 9


# The same scraper, stopping on the replay's 404 as many do on any error: at the end (every record stored),
# or midway, before its last page (whose three records the crawl then never reaches).
DIES_AT_THE_END = RESUMING.replace("""    try:
        opener.open(urllib.request.Request(base + path, headers=headers), timeout=20).read()
    except urllib.error.HTTPError:
        pass""", """    opener.open(urllib.request.Request(base + path, headers=headers), timeout=20).read()""")
CARRIES_ON_THEN_DIES = RESUMING.replace("""    except urllib.error.HTTPError:
        pass""", """    except urllib.error.HTTPError:
        pass
raise SystemExit("the results file cannot be written: disk full")""")
DIES_MIDWAY = RESUMING.replace("""    page = answer["next"]""", """    page = answer["next"]
    if page == 2 and extra:
        opener.open(urllib.request.Request(base + extra[0], headers=headers), timeout=20).read()""")


@pytest.mark.slow
def test_a_start_that_dies_on_a_page_the_recording_lacks_is_unknown_not_a_crash_or_a_loss(recorded, tmp_path):
    """The live site would have served the page: the crash, and the records the crawl never reached after
    it, are the stale recording's doing. Unknown, saying so; not crashed or lost (a false alarm). A scraper
    that carried on past the 404 and died of something else still crashed."""
    spec, made = recorded
    for name, script in (("end", DIES_AT_THE_END), ("midway", DIES_MIDWAY), ("later", CARRIES_ON_THEN_DIES)):
        (tmp_path / f"{name}.py").write_text(script)
        (tmp_path / f"{name}.toml").write_text(SPEC.replace('"creds"', f'"{name}"').replace(
            '"{spec_dir}/scraper.py", "{base_url}", "{store}"',
            ", ".join(json.dumps(w) for w in [f"{{spec_dir}}/{name}.py", "{base_url}", "{store}", "/new-arrivals"]))
            .replace('"creds.warc.gz"', json.dumps(made.recording)))
    out = str(tmp_path / "results")
    ran = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", str(tmp_path / "end.toml"),
                          "--design", str(tmp_path / "midway.toml"), "--design", str(tmp_path / "later.toml"),
                          "--schedule", "r3", "--runs", "1", "--out", out, "--no-plot"],
                         capture_output=True, text=True, timeout=180)
    with open(os.path.join(out, "killtest.json")) as src:
        verdicts = {run["design"]: run for run in json.load(src)["runs"]}
    for name, stored, not_judged in (("end", 9, "crashed"), ("midway", 6, "crashed, lost")):
        verdict = verdicts[name]
        assert verdict["outcome"] == "crashed" and verdict["correct_records"] == stored, ran.stdout + ran.stderr
        assert (verdict["validity"], verdict["findings"]) == ("unknown", ["unrecorded_request"]), verdict["problems"]
        said = verdict["problems"][0]
        assert "right after the replay answered 404 for http://creds.test/new-arrivals" in said, said
        assert f"not judged: {not_judged}." in said and "HTTP Error 404" in said, said
    # Past the 404 it carried on and died of its own error, the missing page its last request: crashed stands.
    later = verdicts["later"]
    assert (later["validity"], later["findings"]) == ("invalid", ["crashed", "unrecorded_request"]), later["problems"]
    assert "disk full" in later["problems"][0]
    assert ran.returncode != 0  # unknown is not a pass

LINKED = f'''
import json, os, sys, urllib.request
base, store = sys.argv[1].rstrip("/"), sys.argv[2]
key = os.environ.get("CREDS_API_KEY", "{API_KEY}")  # CI may hold other credentials than the recording's
opener = urllib.request.build_opener()
headers = {{"Authorization": "Bearer {TOKEN}", "Cookie": "session={SESSION}"}}
page = sum(1 for line in open(store) if line.strip()) // 3 if os.path.exists(store) else 0
while page is not None:
    url = f"{{base}}/items?page={{page}}&api_key={{key}}"
    answer = json.load(opener.open(urllib.request.Request(url, headers=headers), timeout=20))
    with open(store, "a") as out:  # each record keyed by a link that carries the api_key, and its page's URL
        out.write("".join(json.dumps(dict(item, link=f"{{base}}/item/{{item['sku']}}?api_key={{key}}", source=url))
                          + "\\n" for item in answer["items"]))
    page = answer["next"]
'''


@pytest.mark.slow
def test_a_design_keyed_by_urls_with_credentials_has_a_masked_reference_and_is_judged_masked(recording_proxy_env,
                                                                                             tmp_path):
    """The reference made from such a design holds no credential, and a run that used other credentials
    than the recording's is judged correct: its records are masked as the reference's were."""
    (tmp_path / "scraper.py").write_text(LINKED)
    (tmp_path / "design.toml").write_text(SPEC.replace('key = "sku"', 'key = "link"').replace(
        'fields = { price = "price" }', 'fields = { price = "price", name = "source" }'))
    site = CredentialSite()
    try:
        made = _record(str(tmp_path / "design.toml"), site)
    finally:
        site.stop()
    reference = open(made.reference).read()
    assert API_KEY not in reference and f"/item/sku-0-0?api_key={PLACEHOLDER}" in reference
    assert f"/items?page=2&api_key={PLACEHOLDER}" in reference and made.records == 9
    assert scan_reference(made.reference, set()) == [] and scan_recording(made.recording) == []
    rotated = "ak-ROTATED-9Xc2Vb7Nm4Qw1Er8Ty5Ui"
    out = str(tmp_path / "results")
    ran = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", str(tmp_path / "design.toml"),
                          "--schedule", "r2", "--runs", "1", "--out", out, "--no-plot"], capture_output=True,
                         text=True, timeout=180, env={**os.environ, "CREDS_API_KEY": rotated})
    with open(os.path.join(out, "killtest.json")) as src:
        verdict = json.load(src)["runs"][0]
    assert (verdict["validity"], verdict["findings"]) == ("valid", []), ran.stdout + ran.stderr
    assert verdict["correct_records"] == 9 and verdict["kills"] == 1
    written = _every_file(out) + (ran.stdout + ran.stderr).encode()
    assert API_KEY.encode() not in written and rotated.encode() not in written


GIVES_UP = f'''
print("headers were {{'X-Api-Key': '{KEY_HEADER}', 'Accept': '*/*'}}", file=sys.stderr)
print("Authorization: Bearer {TOKEN}", file=sys.stderr)
print("Cookie: session={SESSION}", file=sys.stderr)
sys.exit(f"giving up on {{base}}/items?page=9&api_key={API_KEY}: HTTP Error 404")
'''


@pytest.mark.slow
def test_a_scrapers_stderr_is_masked_wherever_a_recorded_sites_run_quotes_it(recorded, tmp_path):
    """A scraper that quotes its credentials on stderr as it dies: neither the record's error nor the
    run's output, history and reports hold them (the site's redaction masks the quoted lines)."""
    spec, made = recorded
    secrets = (TOKEN, SESSION, API_KEY, KEY_HEADER)
    (tmp_path / "scraper.py").write_text(SCRAPER + GIVES_UP)
    (tmp_path / "design.toml").write_text(SPEC.replace('"creds.warc.gz"', json.dumps(made.recording)))
    out = str(tmp_path / "results")
    ran = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", str(tmp_path / "design.toml"),
                          "--schedule", "r3", "--runs", "1", "--out", out], capture_output=True, text=True, timeout=180)
    with open(os.path.join(out, "killtest.json")) as src:
        verdict = json.load(src)["runs"][0]
    assert "crashed" in verdict["findings"], ran.stdout + ran.stderr
    assert f"giving up on http://creds.test/items?page=9&api_key={PLACEHOLDER}: HTTP Error 404" in (
        " ".join(verdict["problems"]))
    written = _every_file(out) + (ran.stdout + ran.stderr).encode()  # the history, killtest.json/md/html, output
    assert f"Authorization: Bearer {PLACEHOLDER}".encode() in written
    # Every start's last words are kept in the history (start_output), masked as the crash's are.
    from killtest.harness.history import History
    history = History.read_jsonl(next(glob.iglob(os.path.join(out, "history", "*.jsonl"))))
    said = [line for e in history.of_type("start_output") for line in e["stderr_tail"]]
    assert any(f"api_key={PLACEHOLDER}: HTTP Error 404" in line for line in said), said
    for secret in secrets:
        assert secret.encode() not in written, secret
    # Recording with it fails on its exit status, quoting its last line: masked too.
    folder = tmp_path / "record"
    folder.mkdir()
    (folder / "scraper.py").write_text(SCRAPER + GIVES_UP)
    (folder / "design.toml").write_text(SPEC)
    site = CredentialSite()
    try:
        with pytest.raises(KilltestError) as failed:
            _record(str(folder / "design.toml"), site)
    finally:
        site.stop()
    assert f"api_key={PLACEHOLDER}: HTTP Error 404" in str(failed.value)
    assert not [secret for secret in secrets if secret in str(failed.value)]


@pytest.mark.slow
def test_two_real_urls_one_masked_url_with_different_answers_are_warned_of(recording_proxy_env, tmp_path):
    spec = _design_folder(tmp_path)
    with open(tmp_path / "scraper.py") as src:  # first a wrong key (a 404, ignored), then the right one
        probing = src.read().replace("while page is not None:", '''try:
    opener.open(urllib.request.Request(f"{base}/items?page=0&api_key=wrong", headers=headers), timeout=20)
except Exception:
    pass
while page is not None:''')
    (tmp_path / "scraper.py").write_text(probing)
    site, messages = CredentialSite(pages=1), []
    try:
        made = _record(spec, site, messages)
    finally:
        site.stop()
    assert (made.exchanges, made.pages) == (3, 2)  # the two probes are one masked request to the replay
    warned = [m for m in messages if m.startswith("warning: 1 masked URL(s)")]
    assert warned and f"http://creds.test/items?page=0&api_key={PLACEHOLDER}" in warned[0], messages
    assert not [name for name in os.listdir(tmp_path) if "collisions" in name or "partial" in name]


def test_with_several_workers_only_the_dead_workers_own_last_request_cuts_the_crawl_short(recorded):
    """A start ends when all its workers have: the start's last request may be a live worker's. The cut
    reads the dead process's own requests (by pid), and cuts nothing when the site could not tell whose."""
    from killtest.fixture_site.recordings.recorded_site import load_recorded_site
    from killtest.harness.check.stale_recording import cut_short
    from killtest.harness.history import History
    spec, made = recorded
    site = load_recorded_site(made.recording, "http://creds.test/", need_reference=False)
    page, missing = "/http://creds.test/items?page=0&api_key=" + PLACEHOLDER, "/http://creds.test/new-arrivals"

    def history(dead_pid, requests):
        made_up = History()
        for at, (path, pid) in enumerate(requests):
            made_up.add("request", at * 0.1, path=path, status=200, start=0, pid=pid)
        made_up.add("crash", 1.0, start=0, returncode=1, stderr_tail=["HTTPError: HTTP Error 404: NOT FOUND"],
                    pid=dead_pid, workers=2)
        return made_up.sorted()
    assert site.recorded(page) and not site.recorded(missing)
    cut = cut_short(history(11, [(missing, 11), (page, 12)]), site)  # worker 11 died on the 404, 12 went on
    assert cut is not None and cut.url == missing[1:]
    assert cut_short(history(11, [(page, 11), (missing, 12)]), site) is None  # 12 met it; 11 died of its own
    assert cut_short(history(11, [(page, None), (missing, None)]), site) is None  # whose, the site could not tell
