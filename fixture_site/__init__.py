"""The fixture site: a small shop whose catalog is the ground truth and whose server counts every request."""

from killtest.fixture_site.app import create_app
from killtest.fixture_site.catalog import Catalog, Product, build_catalog
from killtest.fixture_site.request_log import RequestLog, ServedRequest
from killtest.fixture_site.server import SiteServer

__all__ = ["Catalog", "Product", "RequestLog", "ServedRequest", "SiteServer", "build_catalog", "create_app"]
