"""Shared fixtures: a small catalog served by the real fixture site, and designs made for the tests."""

from __future__ import annotations

import pytest

from fixture_site.catalog import build_catalog
from fixture_site.server import SiteServer
from harness.designs import Design


@pytest.fixture
def small_catalog():
    """Four listing pages of ten products: 44 requests for a full crawl."""
    return build_catalog(listing_pages=4, products_per_page=10, seed=7)


@pytest.fixture
def site(small_catalog):
    with SiteServer(small_catalog) as server:
        yield server


@pytest.fixture
def default_site():
    """The article's catalog: 25 listing pages, 500 products, 525 requests."""
    with SiteServer(build_catalog()) as server:
        yield server


def fixture_design(name: str, module: str) -> Design:
    """A test-only design whose store is empty; only its process behaviour matters."""
    return Design(name=name, module=module, records_sql="SELECT 1, 1 WHERE 0", claims_idempotence=True)
