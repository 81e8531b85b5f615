"""`killtest serve`: the shop (or a recording) on its own, on 127.0.0.1, to develop a design against it.

Its size is a run's (`--listing-pages`, `--per-page`, the same defaults as `run`). The shop's pages are described
in docs/explanation/shop.md; the line it prints says what a user needs without them (a pip install has no docs/).
With `--design SPEC` whose [site] table names a recording, the recording is replayed through its proxy instead,
and the variables a scraper needs to reach it are printed. Ctrl+C stops it.
"""

from __future__ import annotations

import argparse
import socket
import threading

from werkzeug.serving import make_server

from killtest.fixture_site.app import create_app
from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.request_log import RequestLog
from killtest.harness import defaults, lifeline
from killtest.harness.cli.command import EXIT_PASSED, Command
from killtest.harness.cli.shared import designs_named
from killtest.harness.design.site_spec import site_of
from killtest.harness.errors import KilltestError
from killtest.harness.running.progress import Progress
from killtest.harness.running.recorded import load_site, replaying


class ServeCommand(Command):
    name = "serve"
    help = "serve the shop (or a design's recording) on its own, to develop a design against it"

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        if args.design is None:
            serve_shop(args.port, progress, args.listing_pages, args.per_page)
            return EXIT_PASSED
        site = site_of(designs_named([args.design])[0])
        if site is None:
            raise KilltestError(f"--design {args.design}: its spec has no [site] table naming a recording")
        lifeline.ensure_watchdog()  # the replay proxy runs in a session of its own: it must not outlive us
        with replaying(load_site(site, need_reference=False)) as replay:
            env = " ".join(f"{k}={v}" for k, v in sorted(replay.scraper_env().items()) if v)
            progress.done(f"replaying {site.recording} for {site.start_url}; a scraper reaches it with: {env}")
            threading.Event().wait()  # until Ctrl+C
        return EXIT_PASSED


def serve_shop(port: int, progress: Progress, listing_pages: int = defaults.LISTING_PAGES,
               per_page: int = defaults.PER_PAGE) -> None:
    """The shop of `listing_pages` x `per_page` products, the one a run of that size crawls, until Ctrl+C."""
    catalog = build_catalog(listing_pages, per_page)
    app = create_app(catalog, RequestLog())
    try:  # werkzeug would print its own advice and exit 1: say it in killtest's one line instead
        with socket.create_server(("127.0.0.1", port)):
            pass
    except OSError as error:
        raise KilltestError(f"--port {port}: cannot listen on 127.0.0.1:{port}: {error.strerror}") from None
    server = make_server("127.0.0.1", port, app, threaded=True)
    # Said here, not by a path into docs/: an installed killtest has no docs folder to point to.
    progress.done(f"the shop: http://127.0.0.1:{server.server_port}/list/0 ({listing_pages} listing page"
                  f"{'s' if listing_pages != 1 else ''} of {per_page} products, {len(catalog.products)} product pages"
                  f" at /product/N: a full crawl is {catalog.full_crawl_requests} requests); Ctrl+C stops it")
    try:
        server.serve_forever()
    finally:
        server.server_close()
