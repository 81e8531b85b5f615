"""The site's content drifting during a run: each change a `catalog_changed` event in the history.

Before every re-crawl the site changes (killtest.fixture_site.catalog.drifted), and once during the killed
crawl when the run asks for it; when the run ends the first catalog is put back, so the next
design's run starts from the same site.
"""

from __future__ import annotations

import threading
import time

from killtest.fixture_site.catalog import Drift, changes_between, drifted
from killtest.fixture_site.server import SiteServer
from killtest.harness.check.drift import a_new_price, repriced
from killtest.harness.history import History


class SiteDrift:
    """Changes the site's catalog during a run, each change a `catalog_changed` event, and puts the
    first catalog back when the run ends (the next design's run starts from the same site)."""

    def __init__(self, site: SiteServer, drift: Drift | None, history: History, began: float) -> None:
        self.site, self.drift, self.history, self.began = site, drift, history, began
        self.original = site.catalog
        self.version = 0
        self.crawl_served = 1  # the crawl the site's current catalog was made for
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def before_crawl(self, crawl: int) -> None:
        """A re-crawl meets a site that changed since the crawl before it."""
        if self.drift is not None and crawl > self.crawl_served:
            self.change_now()
            self.crawl_served = crawl

    def schedule(self, after_s: float) -> None:
        self._timer = threading.Timer(after_s, self.change_now)
        self._timer.daemon = True
        self._timer.start()

    def change_now(self) -> None:
        with self._lock:
            assert self.drift is not None  # only a run with a drift changes the site
            before = self.site.catalog
            self.version += 1
            after = drifted(before, self.drift, self.version)
            self.site.set_catalog(after, self.version)
            self.history.add("catalog_changed", time.monotonic() - self.began, version=self.version,
                             **changes_between(before, after), products=len(after.products),
                             full_crawl_requests=after.full_crawl_requests)

    def reprice(self, paths: set[str]) -> list[str]:
        """Change the price of the products at `paths` now (an aimed pause: the pages a paused worker holds),
        as a `catalog_changed` event with `aimed`, the new prices, so the checker rebuilds this version."""
        with self._lock:
            before = self.site.catalog
            prices = {p.sku: a_new_price(p.price) for p in before.products if p.path in paths}
            if not prices:
                return []
            self.version += 1
            after = repriced(before, prices)
            self.site.set_catalog(after, self.version)
            self.history.add("catalog_changed", time.monotonic() - self.began, version=self.version,
                             **changes_between(before, after), products=len(after.products),
                             full_crawl_requests=after.full_crawl_requests, aimed=prices)
            return sorted(prices)

    def cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def restore(self) -> None:
        self.cancel_timer()
        with self._lock:
            self.site.set_catalog(self.original)
