"""A shop in the shape of killtest's fixture shop, on the standard library alone, for the cases' framework-only
reproductions (scrapy-4106/repro/, crawlee-node-2085-locking/repro/): listing pages `/list/N` (the products in
`ul a`, the next page in `a.next`), a product page each (`.sku`, `.price`, `.name`). It answers one request
at a time, about 140 a second (killtest's default pace), and writes how many it has answered to COUNT_FILE
after each, so a script can kill the crawler at the n-th request as killtest's `r<n>` does.

    python repro_shop.py PORT COUNT_FILE [PRODUCTS PER_PAGE]     (default 500 products, 20 a page)
"""

import http.server
import os
import sys
import time

PRODUCTS, PER_PAGE = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (500, 20)
served = 0


def page(path: str) -> bytes | None:
    if path.startswith("/list/") and path[6:].isdigit() and int(path[6:]) < PRODUCTS // PER_PAGE:
        n = int(path[6:])
        links = "".join(f'<li><a href="/product/{i}">product {i}</a></li>'
                        for i in range(n * PER_PAGE, (n + 1) * PER_PAGE))
        nxt = f'<a class="next" href="/list/{n + 1}">next</a>' if n + 1 < PRODUCTS // PER_PAGE else ""
        return f"<html><body><ul>{links}</ul>{nxt}</body></html>".encode()
    if path.startswith("/product/") and path[9:].isdigit() and int(path[9:]) < PRODUCTS:
        i = int(path[9:])
        return (f'<html><body><span class="sku">SKU-{10000 + i}</span><span class="price">{i}.99</span>'
                f'<span class="name">Product {i}</span></body></html>').encode()
    return None


class Shop(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        global served
        time.sleep(1 / 140)
        body = page(self.path)
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        try:
            self.wfile.write(body or b"")
        except BrokenPipeError:  # the crawler was killed while this answer was on its way
            return
        served += 1
        with open(sys.argv[2] + ".new", "w") as out:  # replaced whole, so a reader never sees it half written
            out.write(str(served))
        os.replace(sys.argv[2] + ".new", sys.argv[2])

    def log_message(self, *args) -> None:
        pass


http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Shop).serve_forever()
