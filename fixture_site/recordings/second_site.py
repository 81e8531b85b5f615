"""A second local site with another shape than the shop, to record and replay without the internet.

A small bookshop, served by plain werkzeug servers on 127.0.0.1, reached by the name `books.test`
(the recording proxy maps it to the local ports: `killtest record --resolve`; /etc/hosts is never
touched). Unlike the shop it has query-string pagination (`/catalogue?page=2`), relative links
(`book/slug`) and absolute ones (`https://books.test/book/slug`), a redirect (`/catalogue` -> page 1),
gzip-encoded pages, a robots.txt, and its book pages over HTTPS, with a self-signed certificate
made on the spot with `cryptography`.

A book page: `<h1 class="title">`, `<p class="price">` and `<span class="upc">` (the natural key).
"""

from __future__ import annotations

import datetime
import gzip
import ipaddress
import logging
import os
import random
import ssl
import threading

from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.wrappers import Request, Response

HOST = "books.test"
PER_PAGE = 8


def books(count: int = 40, seed: int = 0) -> list[dict[str, str]]:
    """The shop's books: upc, slug, title, price; the same for the same arguments."""
    rng = random.Random(f"killtest-books:{seed}")
    return [{"upc": f"{rng.getrandbits(48):012x}", "slug": f"book-{i}", "title": f"Book number {i}",
             "price": f"{rng.randint(100, 9_999) / 100:.2f}"} for i in range(count)]


def self_signed_cert(directory: str, host: str = HOST) -> tuple[str, str]:
    """A certificate for `host` and 127.0.0.1, and its key, written to `directory`: (cert path, key path)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=7))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = os.path.join(directory, "site-cert.pem"), os.path.join(directory, "site-key.pem")
    with open(cert_path, "wb") as out:
        out.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as out:
        out.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                    serialization.NoEncryption()))
    return cert_path, key_path


def bookshop_app(catalogue: list[dict[str, str]]):
    """The WSGI app; the same app answers on the HTTP and the HTTPS port."""
    by_slug = {book["slug"]: book for book in catalogue}
    pages = -(-len(catalogue) // PER_PAGE)

    def page(title: str, body: str) -> str:
        return f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"

    def gzipped(text: str, status: int = 200) -> Response:
        return Response(gzip.compress(text.encode(), mtime=0), status, content_type="text/html; charset=utf-8",
                        headers={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})

    @Request.application
    def app(request: Request) -> Response:
        if request.path == "/robots.txt":
            return Response("User-agent: *\nDisallow: /private/\n", content_type="text/plain")
        if request.path == "/":
            return gzipped(page("Books", '<a href="/catalogue">Catalogue</a> <a href="/private/x">Staff</a>'))
        if request.path == "/catalogue":
            number = request.args.get("page")
            if number is None:
                return Response("", 301, headers={"Location": "/catalogue?page=1"})
            if not number.isdigit() or not 1 <= int(number) <= pages:
                return Response("no such page", 404)
            n = int(number)
            shown = catalogue[(n - 1) * PER_PAGE:n * PER_PAGE]
            # Every other book by a relative link, the rest by an absolute https:// one.
            links = "".join(f'<li><a class="book" href="{"book/" if i % 2 else f"https://{HOST}/book/"}'
                            f'{b["slug"]}">{b["title"]}</a></li>' for i, b in enumerate(shown))
            more = f'<a class="next" href="?page={n + 1}">next</a>' if n < pages else ""
            return gzipped(page(f"Catalogue {n}", f"<ul>{links}</ul>{more}"))
        if request.path.startswith("/book/") and request.path[6:] in by_slug:
            book = by_slug[request.path[6:]]
            return gzipped(page(book["title"], f'<h1 class="title">{book["title"]}</h1><p class="price">'
                                               f'{book["price"]}</p><span class="upc">{book["upc"]}</span>'))
        return Response("not found", 404)

    return app


class BookshopServer:
    """The bookshop on two loopback ports, `http_port` and `https_port`, in background threads."""

    def __init__(self, directory: str, count: int = 40) -> None:
        self.catalogue = books(count)
        self.cert, self._key = self_signed_cert(directory)
        self._servers: list[BaseWSGIServer] = []

    def start(self) -> BookshopServer:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        app = bookshop_app(self.catalogue)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self._key)
        for tls in (None, context):
            server = make_server("127.0.0.1", 0, app, threaded=True, ssl_context=tls)
            self._servers.append(server)
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    @property
    def http_port(self) -> int:
        return self._servers[0].server_port

    @property
    def https_port(self) -> int:
        return self._servers[1].server_port

    def resolve(self) -> list[str]:
        """The `--resolve` arguments that take `books.test` to these ports."""
        return [f"{HOST}:80=127.0.0.1:{self.http_port}", f"{HOST}:443=127.0.0.1:{self.https_port}"]

    def truth(self) -> dict[str, dict[str, str]]:
        return {b["upc"]: {"price": b["price"], "name": b["title"]} for b in self.catalogue}

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers = []

    def __enter__(self) -> BookshopServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":  # python -m killtest.fixture_site.recordings.second_site DIR: serve it until Ctrl+C
    import sys
    import time

    with BookshopServer(sys.argv[1] if len(sys.argv) > 1 else ".") as shop:
        print(" ".join(f"--resolve {r}" for r in shop.resolve()), flush=True)
        while True:
            time.sleep(3600)
