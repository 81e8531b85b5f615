import threading
import time

import pytest
import requests

from killtest.fixture_site.server import SiteServer
from killtest.scrapers.common import LISTING_LINK, PRODUCT_LINK, parse_product


def test_site_is_served_on_loopback_with_an_ephemeral_port(site):
    assert site.base_url.startswith("http://127.0.0.1:")
    assert not site.base_url.endswith(":0")


def test_listing_page_links_its_products_and_the_next_page(site, small_catalog):
    html = requests.get(site.base_url + "/list/0").text
    assert PRODUCT_LINK.findall(html) == [p.path for p in small_catalog.products[:10]]
    assert LISTING_LINK.findall(html) == ["/list/1"]
    last = requests.get(site.base_url + f"/list/{small_catalog.listing_pages - 1}").text
    assert LISTING_LINK.findall(last) == []


def test_product_page_shows_the_ground_truth(site, small_catalog):
    product = small_catalog.products[3]
    assert parse_product(requests.get(site.base_url + product.path).text) == {"sku": product.sku, **product.fields()}


def test_every_request_is_counted_including_repeats_and_404s(site):
    session = requests.Session()
    for path in ["/list/0", "/list/0", "/product/1", "/product/9999"]:
        session.get(site.base_url + path)
    log = site.request_log
    assert log.total == 4
    assert log.served_more_than_once() == {"/list/0": 2}
    assert [r.status for r in log.snapshot()] == [200, 200, 200, 404]


def test_counts_are_exact_under_concurrent_clients(site):
    def fetch_many():
        session = requests.Session()
        for i in range(25):
            session.get(f"{site.base_url}/product/{i % 40}")

    threads = [threading.Thread(target=fetch_many) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert site.request_log.total == 200
    assert sum(site.request_log.per_path().values()) == 200


def test_latency_delays_every_response_by_at_least_its_length(small_catalog):
    with SiteServer(small_catalog, latency_s=0.05) as slow:
        began = time.monotonic()
        requests.get(slow.base_url + "/list/0")
        assert time.monotonic() - began >= 0.05


def test_negative_latency_is_refused(small_catalog):
    with pytest.raises(ValueError):
        SiteServer(small_catalog, latency_s=-1)


def test_stopped_site_refuses_connections(small_catalog):
    server = SiteServer(small_catalog).start()
    url = server.base_url
    server.stop()
    with pytest.raises(requests.ConnectionError):
        requests.get(url + "/list/0", timeout=2)
