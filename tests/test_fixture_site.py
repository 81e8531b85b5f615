import re
import threading
import time
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
import requests
from parsel import Selector

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


def test_every_page_offers_the_crawlers_exactly_the_links_and_values_it_always_did(site, small_catalog):
    """The heavy pages (fixture_site/pages.py) add no link that any crawler of the suite takes: the designs' regexes
    (scrapers/common.py, the shell and Node designs' greps, the test fixtures' `class="next"`), and the Scrapy and
    Crawlee designs' selectors (`ul a`, `a.next`, `.sku::text`, scrapers/peers/)."""
    session = requests.Session()
    for number in range(small_catalog.listing_pages):
        html = session.get(f"{site.base_url}/list/{number}").text
        products, next_page = small_catalog.listing(number)
        following = [f"/list/{next_page}"] if next_page is not None else []
        page = Selector(html)
        assert PRODUCT_LINK.findall(html) == page.css("ul a::attr(href)").getall() == [p.path for p in products]
        assert LISTING_LINK.findall(html) == page.css("a.next::attr(href)").getall() == following
        assert re.findall(r'class="next" href="(/list/\d+)"', html) == following
        items = "".join(f'<li><a href="{p.path}">Product {p.index}</a></li>' for p in products)
        assert f"<ul>{items}</ul>" + "".join(f'<a class="next" href="{f}">Next</a>' for f in following) in html
        assert len(page.css("ul")) == 1 and not page.css(".sku, .price, .name, .photo")
    for product in small_catalog.products:
        html = session.get(site.base_url + product.path).text
        page = Selector(html)
        assert PRODUCT_LINK.findall(html) == LISTING_LINK.findall(html) == page.css("ul a, a.next") == []
        assert [page.css(f".{field}::text").getall() for field in ("sku", "price", "name")] == [
            [product.sku], [product.price], [product.name]]
        assert page.css(".photo::attr(src)").getall() == [product.image_path]
        summary = (f'<h1 class="name">{product.name}</h1><span class="sku">{product.sku}</span> '
                   f'<span class="price">{product.price}</span> <img class="photo" src="{product.image_path}" alt="">')
        assert summary in html


def test_a_crawler_that_follows_every_link_makes_the_full_crawls_requests_and_no_more(site, small_catalog):
    """As a CrawlSpider with a bare LinkExtractor or Crawlee's enqueueLinks() with no selector would: every
    <a>, <area> and <link> href, resolved, its fragment dropped, on this host. The navigation's in-page anchors
    lead back to the page itself, and the relative canonical link too."""
    session, seen, queue = requests.Session(), {"/list/0"}, ["/list/0"]
    host = urlsplit(site.base_url).netloc
    while queue:
        path = queue.pop(0)
        html = session.get(site.base_url + path).text
        for href in Selector(html).css("a::attr(href), area::attr(href), link::attr(href)").getall():
            url = urldefrag(urljoin(site.base_url + path, href)).url
            if urlsplit(url).netloc == host and urlsplit(url).path not in seen:
                seen.add(urlsplit(url).path)
                queue.append(urlsplit(url).path)
    pages = {f"/list/{n}" for n in range(small_catalog.listing_pages)} | {p.path for p in small_catalog.products}
    assert seen == pages
    assert site.request_log.total == site.request_log.crawl_total == small_catalog.full_crawl_requests == 44


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
