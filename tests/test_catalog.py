from hypothesis import given
from hypothesis import strategies as st

from killtest.fixture_site.catalog import build_catalog
from killtest.harness.published import FULL_CRAWL_REQUESTS, LISTING_PAGES, PRODUCTS


def test_default_catalog_is_the_articles_site_of_525_pages():
    catalog = build_catalog()
    assert catalog.listing_pages == LISTING_PAGES
    assert len(catalog.products) == PRODUCTS
    assert catalog.full_crawl_requests == FULL_CRAWL_REQUESTS


def test_same_seed_builds_the_same_catalog_and_another_seed_does_not():
    assert build_catalog(seed=3) == build_catalog(seed=3)
    assert build_catalog(seed=3).prices_by_sku() != build_catalog(seed=4).prices_by_sku()


@given(pages=st.integers(1, 30), per_page=st.integers(1, 30), seed=st.integers(0, 10**6))
def test_every_product_has_a_unique_sku_and_sits_on_exactly_one_listing_page(pages, per_page, seed):
    catalog = build_catalog(pages, per_page, seed)
    assert len(catalog.prices_by_sku()) == len(catalog.products) == pages * per_page
    listed = [p for page in range(catalog.listing_pages) for p in catalog.listing(page)[0]]
    assert listed == list(catalog.products)
    assert catalog.listing(catalog.listing_pages - 1)[1] is None


def test_a_catalog_bigger_than_five_digit_skus_still_has_one_sku_a_product():
    catalog = build_catalog(listing_pages=5_000, products_per_page=20)
    assert len({p.sku for p in catalog.products}) == 100_000
    assert build_catalog(2, 3).truth() == build_catalog(2, 3).truth()  # small catalogs unchanged by the range
