"""The proxy process of a recorded site: mitmproxy, run programmatically with one addon of ours.

    python -m killtest.fixture_site.recordings.replay_proxy replay --confdir DIR --upstream-file FILE [REDACTION]
    python -m killtest.fixture_site.recordings.replay_proxy record --confdir DIR --warc OUT
        [--resolve HOST[:PORT]=IP:PORT] [REDACTION]
    (REDACTION: --redact-param NAME, --redact-header NAME, --unredacted NAME, each repeatable)

Both modes mask credentials here, in the proxy (killtest.fixture_site.recordings.redaction): the recorder before
it writes an exchange, the replay before the request reaches the harness's server. So neither the
WARC nor the request log, the history or a report ever holds one, and the masked request the replay
matches is the masked request the recorder wrote.

It listens on 127.0.0.1 and a free port (`listen_port=0`), and prints `{"port": N, "ca": PATH}` on
stdout once listening: the port read back from the proxyserver addon's `listen_addrs()`, and the CA
mitmproxy generated in `confdir` (mitmproxy-ca-cert.pem), which the scraper is told to trust.

What we rely on in mitmproxy 11 and 12 (mitmproxy/addons/proxyserver.py, mitmproxy/master.py; pins: replay.py):
- `connection_strategy` defaults to "eager": on a CONNECT, mitmproxy connects to the target before any
  request. We set "lazy", so no connection is made until our `request` hook has chosen the upstream:
  a replay never reaches the network, and a recording's host can be mapped to a local address.
- A flow's request may be rewritten in the `request` hook (scheme, host, port, path), and the
  connection goes where it then points (what mitmproxy's own map_remote addon does).

Replay does not use mitmproxy's server-side replay (mitmproxy/addons/serverplayback.py): its
default for a request not in the recording is `server_replay_extra = "forward"` (to the network),
it forwards everything while it holds no flow, and it answers inside the proxy, where the harness's
request log, kill points and toxics cannot see. Instead every request goes, rewritten, to the
harness's own server (killtest.fixture_site.recordings.replay), which answers from the WARC, 404 when the
recording does not hold the URL: fail closed.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
from urllib.parse import quote

from killtest.fixture_site.recordings.redaction import PLACEHOLDER, Redaction
from killtest.fixture_site.recordings.secret_scan import INFO_UNREDACTED

# Where Chromium goes of its own accord (component updates, Safe Browsing, sync, optimization hints,
# variations): answered 204 by the proxy itself, neither recorded nor replayed nor logged, since they are
# the browser's traffic, not the site's (the browser is also told not to, KILLTEST_BROWSER_ARGS).
BROWSER_BACKGROUND_HOSTS = ("googleapis.com", "gvt1.com", "gvt2.com", "clients2.google.com",
                            "clients1.google.com", "accounts.google.com", "update.googleapis.com",
                            "clientservices.googleapis.com", "safebrowsing.google.com", "redirector.gvt1.com")


def blocked(flow) -> bool:
    """Answer a request to a browser's background host inside the proxy (204); True when it was one."""
    host = flow.request.pretty_host.lower()
    if not any(host == name or host.endswith("." + name) for name in BROWSER_BACKGROUND_HOSTS):
        return False
    from mitmproxy import http

    flow.response = http.Response.make(204)
    flow.metadata["killtest_blocked"] = True
    return True


class ToReplay:
    """Every request to the harness's replay server, its whole URL (credentials masked) quoted into the path."""

    def __init__(self, upstream_file: str, redaction: Redaction) -> None:
        self.upstream_file = upstream_file
        self.redaction = redaction

    def request(self, flow) -> None:
        if blocked(flow):
            return
        url = self.redaction.url(flow.request.url)
        with open(self.upstream_file, encoding="utf-8") as src:  # the current door's port; it moves between runs
            port = int(src.read().strip())
        flow.request.scheme, flow.request.host, flow.request.port = "http", "127.0.0.1", port
        flow.request.path = "/" + quote(url, safe="")


class Recorder:
    """Every exchange to a WARC file, under the URL the scraper asked for; hosts mapped to local addresses."""

    def __init__(self, warc: str, resolve: dict[str, tuple[str, int]], redaction: Redaction) -> None:
        from warcio.warcwriter import WARCWriter

        self.out = open(warc, "wb")
        self.writer = WARCWriter(self.out, gzip=True)
        self.resolve = resolve
        self.redaction = redaction
        self.stored: dict[str, tuple[str, str]] = {}  # payload digest -> (URL, date) of the record that holds it
        self.masked: dict[str, tuple[str, bytes]] = {}  # masked request -> the first real URL and its answer
        self.collisions: list[str] = []
        self.warc = warc
        # What the recording says of itself: the check-recording scan reads the names kept on purpose.
        self.writer.write_record(self.writer.create_warcinfo_record(os.path.basename(warc), {
            "software": "killtest record (mitmproxy, warcio)", "killtest-placeholder": PLACEHOLDER,
            INFO_UNREDACTED: ", ".join(redaction.unredacted)}))

    def request(self, flow) -> None:
        if blocked(flow):
            return
        flow.metadata["killtest_url"] = flow.request.url
        target = self.resolve.get(f"{flow.request.host}:{flow.request.port}") or self.resolve.get(flow.request.host)
        if target is not None:
            host_header = flow.request.host_header
            flow.request.host, flow.request.port = target
            flow.request.host_header = host_header  # the site still sees the name the scraper used

    def response(self, flow) -> None:
        from killtest.fixture_site.recordings.recorded_site import write_exchange

        if flow.metadata.get("killtest_blocked"):
            return
        request, response, mask = flow.request, flow.response, self.redaction
        request_headers = list(request.headers.items())
        real, masked = flow.metadata["killtest_url"], mask.url(flow.metadata["killtest_url"])
        # Two real URLs that differ only in a masked value, with different answers, are one URL to the
        # replay: it would serve one answer for both. Only the masked URL is kept, to be reported.
        answer = hashlib.sha256(response.raw_content or b"").digest()
        seen = self.masked.setdefault(f"{request.method} {masked}", (real, answer))
        if seen[0] != real and seen[1] != answer and masked not in self.collisions:
            self.collisions.append(masked)
            self._write_collisions()
        write_exchange(self.writer, masked, request.method,
                       mask.request_headers(request_headers), mask.body(request_headers, request.raw_content or b""),
                       response.status_code, response.reason, mask.response_headers(list(response.headers.items())),
                       response.raw_content or b"", self.stored)
        self.out.flush()

    def done(self) -> None:
        self.out.close()
        self._write_collisions()

    def _write_collisions(self) -> None:
        """Written when a collision is found, not only at shutdown: a proxy slow to stop is SIGKILLed after 5 s
        (replay.ProxyProcess.stop), and a list kept for done() alone was lost with it (a slowed CI machine
        recorded the two probes and never warned). A rename, so the harness reads the old list or the new."""
        temporary = self.warc + ".collisions.tmp"
        with open(temporary, "w", encoding="utf-8") as out:
            json.dump(self.collisions, out)
        os.replace(temporary, self.warc + ".collisions")


class SayPort:
    """Print the bound port and the CA once the proxy listens."""

    def __init__(self, confdir: str) -> None:
        self.confdir = confdir

    def running(self) -> None:
        from mitmproxy import ctx

        addresses = ctx.master.addons.get("proxyserver").listen_addrs()
        ca = f"{self.confdir}/mitmproxy-ca-cert.pem"
        print(json.dumps({"port": addresses[0][1], "ca": ca, "spki": spki_sha256(ca)}), flush=True)


def spki_sha256(pem_file: str) -> str:
    """The base64 SHA-256 of a certificate's public key (SubjectPublicKeyInfo): what Chromium's
    --ignore-certificate-errors-spki-list takes. The proxy's certificates for every site share the CA's key."""
    import base64
    import hashlib

    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    with open(pem_file, "rb") as pem:
        key = x509.load_pem_x509_certificate(pem.read()).public_key()
    spki = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(spki).digest()).decode()


def parse_resolve(texts: list[str]) -> dict[str, tuple[str, int]]:
    """`books.test:443=127.0.0.1:8443` (or without the :443) -> {"books.test:443": ("127.0.0.1", 8443)}."""
    found = {}
    for text in texts:
        name, _, target = text.partition("=")
        host, _, port = target.rpartition(":")
        if not name or host != "127.0.0.1" or not port.isdigit():
            raise ValueError(f"--resolve takes HOST[:PORT]=127.0.0.1:PORT (loopback only), not {text!r}")
        found[name.lower()] = (host, int(port))
    return found


async def serve(args: argparse.Namespace) -> None:
    from mitmproxy import options
    from mitmproxy.tools.dump import DumpMaster

    opts = options.Options(listen_host="127.0.0.1", listen_port=0, confdir=args.confdir)
    master = DumpMaster(opts, with_termlog=False, with_dumper=False)
    master.options.update(connection_strategy="lazy", ssl_insecure=args.insecure_upstream)
    redaction = Redaction(tuple(args.redact_param), tuple(args.redact_header), tuple(args.unredacted))
    if args.mode == "replay":
        master.addons.add(ToReplay(args.upstream_file, redaction))
    else:
        master.addons.add(Recorder(args.warc, parse_resolve(args.resolve), redaction))
    master.addons.add(SayPort(args.confdir))
    await master.run()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="replay_proxy")
    parser.add_argument("mode", choices=("replay", "record"))
    parser.add_argument("--confdir", required=True)
    parser.add_argument("--upstream-file")
    parser.add_argument("--warc")
    parser.add_argument("--resolve", action="append", default=[])
    parser.add_argument("--insecure-upstream", action="store_true")
    for flag in ("--redact-param", "--redact-header", "--unredacted"):
        parser.add_argument(flag, action="append", default=[])
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass
    except ValueError as error:
        print(json.dumps({"error": str(error)}), flush=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
