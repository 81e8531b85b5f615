"""The catalog: listing pages and products generated from a seed, and the ground truth the checker uses."""

from __future__ import annotations

import random
from dataclasses import dataclass

# The article's test site: 25 listing pages of 20 products each (source: seeds/000, "열 번 죽여보기").
DEFAULT_LISTING_PAGES = 25
DEFAULT_PRODUCTS_PER_PAGE = 20
# What a product page shows besides its SKU: the fields a design's spec can map its columns to.
TRUTH_FIELDS = ("price", "name")


@dataclass(frozen=True)
class Product:
    """One product page: its index in the catalog, its natural key and its price as the page shows it."""

    index: int
    sku: str
    price: str

    @property
    def path(self) -> str:
        return f"/product/{self.index}"

    @property
    def name(self) -> str:
        return f"Product {self.index}"

    def fields(self) -> dict[str, str]:
        """The product's values as its page shows them, by TRUTH_FIELDS name."""
        return {"price": self.price, "name": self.name}


@dataclass(frozen=True)
class Catalog:
    """Listing pages that link products and the next listing page; the site's ground truth."""

    products: tuple[Product, ...]
    products_per_page: int

    @property
    def listing_pages(self) -> int:
        return -(-len(self.products) // self.products_per_page)

    @property
    def full_crawl_requests(self) -> int:
        """The fewest requests that fetch every page once: one per listing page and one per product."""
        return self.listing_pages + len(self.products)

    def listing(self, page: int) -> tuple[list[Product], int | None]:
        """The products on listing page `page` and the number of the next page (None on the last)."""
        if not 0 <= page < self.listing_pages:
            raise KeyError(page)
        start = page * self.products_per_page
        next_page = page + 1 if page + 1 < self.listing_pages else None
        return list(self.products[start:start + self.products_per_page]), next_page

    def prices_by_sku(self) -> dict[str, str]:
        return {product.sku: product.price for product in self.products}

    def truth(self) -> dict[str, dict[str, str]]:
        """Ground truth: every product's fields by SKU."""
        return {product.sku: product.fields() for product in self.products}

    def paths_by_sku(self) -> dict[str, str]:
        return {product.sku: product.path for product in self.products}


def build_catalog(listing_pages: int = DEFAULT_LISTING_PAGES,
                  products_per_page: int = DEFAULT_PRODUCTS_PER_PAGE,
                  seed: int = 0) -> Catalog:
    """A catalog whose SKUs and prices depend only on the arguments, so every run sees the same site."""
    if listing_pages < 1 or products_per_page < 1:
        raise ValueError("a catalog needs at least one listing page and one product per page")
    rng = random.Random(f"killtest-catalog:{seed}")
    count = listing_pages * products_per_page
    # Sampled without replacement so two products never share a SKU, whatever the seed.
    sku_numbers = rng.sample(range(10_000, 100_000), count)
    products = tuple(
        Product(index=i, sku=f"SKU-{number}", price=f"{rng.randint(100, 99_999) / 100:.2f}")
        for i, number in enumerate(sku_numbers))
    return Catalog(products=products, products_per_page=products_per_page)
