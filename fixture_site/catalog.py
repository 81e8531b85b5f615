"""The catalog: listing pages and products generated from a seed, and the ground truth the checker uses."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

# The article's test site: 25 listing pages of 20 products each (source: seeds/000, "열 번 죽여보기").
DEFAULT_LISTING_PAGES = 25
DEFAULT_PRODUCTS_PER_PAGE = 20
# What a product page shows besides its SKU: the fields a design's spec can map its columns to.
TRUTH_FIELDS = ("price", "name")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"  # the empty IEND chunk every PNG file ends with


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

    @property
    def image_path(self) -> str:
        return f"/image/{self.index}.png"

    def image(self) -> bytes:
        """The product's picture: bytes that change when the product does (a new price, a new photo),
        framed as a PNG is, so a client can tell a whole file (it ends in the IEND chunk) from a cut one."""
        return PNG_SIGNATURE + hashlib.sha256(f"{self.sku}:{self.price}".encode()).digest() * 8 + PNG_END

    @property
    def image_hash(self) -> str:
        return hashlib.sha256(self.image()).hexdigest()

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

    def product(self, index: int) -> Product | None:
        """The product whose page is /product/<index>, or None when the catalog does not hold it (any more)."""
        return self._by_index().get(index)

    def _by_index(self) -> dict[int, Product]:
        by_index = self.__dict__.get("_index")
        if by_index is None:  # frozen: cache the lookup on the instance without changing its fields
            by_index = {p.index: p for p in self.products}
            object.__setattr__(self, "_index", by_index)
        return by_index

    def prices_by_sku(self) -> dict[str, str]:
        return {product.sku: product.price for product in self.products}

    def truth(self) -> dict[str, dict[str, str]]:
        """Ground truth: every product's fields by SKU."""
        return {product.sku: product.fields() for product in self.products}

    def paths_by_sku(self) -> dict[str, str]:
        return {product.sku: product.path for product in self.products}


@dataclass(frozen=True)
class Drift:
    """How the site changes between versions: shares of products repriced, removed and added."""

    changed: float = 0.1
    removed: float = 0.02
    added: float = 0.02
    seed: int = 0

    @property
    def spec(self) -> str:
        return f"changed={self.changed:g},removed={self.removed:g},added={self.added:g}"


def parse_drift(text: str, seed: int = 0) -> Drift:
    """A Drift from `changed=0.1,removed=0.02,added=0.02` (any of the three; the others keep their
    defaults); a mistake raises ValueError with a one-line message."""
    shares = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, _, value = part.partition("=")
        if name not in ("changed", "removed", "added"):
            raise ValueError(f"bad drift {part!r}: write changed=SHARE, removed=SHARE or added=SHARE")
        try:
            shares[name] = float(value)
        except ValueError:
            raise ValueError(f"{name}= takes a share between 0 and 1, not {value!r}") from None
        if not 0 <= shares[name] <= 1:
            raise ValueError(f"{name}={value}: a share is between 0 and 1")
    return Drift(seed=seed, **shares)


def drifted(catalog: Catalog, drift: Drift, version: int) -> Catalog:
    """Version `version` of the site, made from the one before: some prices change, some products go,
    some new ones appear at the end of the listing. The same arguments always give the same catalog."""
    rng = random.Random(f"killtest-drift:{drift.seed}:{version}")
    kept = [p for p in catalog.products if rng.random() >= drift.removed]
    products = [Product(p.index, p.sku, _new_price(rng, p.price)) if rng.random() < drift.changed else p
                for p in kept]
    taken = {p.sku for p in catalog.products}
    next_index = max((p.index for p in catalog.products), default=-1) + 1
    for offset in range(round(len(catalog.products) * drift.added)):
        sku = f"SKU-{rng.randint(100_000, 999_999)}"  # six digits: never an original five-digit SKU
        while sku in taken:
            sku = f"SKU-{rng.randint(100_000, 999_999)}"
        taken.add(sku)
        products.append(Product(next_index + offset, sku, f"{rng.randint(100, 99_999) / 100:.2f}"))
    return Catalog(products=tuple(products), products_per_page=catalog.products_per_page)


def _new_price(rng: random.Random, price: str) -> str:
    while True:
        new = f"{rng.randint(100, 99_999) / 100:.2f}"
        if new != price:
            return new


def changes_between(before: Catalog, after: Catalog) -> dict[str, list[str]]:
    """SKUs whose values changed, that were removed and that were added, from `before` to `after`."""
    old, new = before.truth(), after.truth()
    return {"changed": sorted(k for k in set(old) & set(new) if old[k] != new[k]),
            "removed": sorted(set(old) - set(new)), "added": sorted(set(new) - set(old))}


def build_catalog(listing_pages: int = DEFAULT_LISTING_PAGES,
                  products_per_page: int = DEFAULT_PRODUCTS_PER_PAGE,
                  seed: int = 0) -> Catalog:
    """A catalog whose SKUs and prices depend only on the arguments, so every run sees the same site."""
    if listing_pages < 1 or products_per_page < 1:
        raise ValueError("a catalog needs at least one listing page and one product per page")
    rng = random.Random(f"killtest-catalog:{seed}")
    count = listing_pages * products_per_page
    # Sampled without replacement so two products never share a SKU, whatever the seed. Five digits hold
    # 90,000 products; a bigger catalog draws from a wider range (the smaller ones keep their SKUs).
    high = 100_000 if count <= 90_000 else 10_000 + 2 * count
    sku_numbers = rng.sample(range(10_000, high), count)
    products = tuple(
        Product(index=i, sku=f"SKU-{number}", price=f"{rng.randint(100, 99_999) / 100:.2f}")
        for i, number in enumerate(sku_numbers))
    return Catalog(products=products, products_per_page=products_per_page)
