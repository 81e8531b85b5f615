"""The shop's pages as a real shop's: a full <head>, navigation, breadcrumbs, a footer, descriptions with
words in them and schema.org JSON-LD (`Product` on a product page, `ItemList` on a listing page), 19 KB a
product page and 29 KB a listing page of the article's shop; and the shop's robots.txt and sitemap.xml.

What the crawlers parse is kept byte for byte as it always was (docs/explanation/shop.md): a listing
page's `<ul>` of `<li><a href="/product/I">Product I</a></li>` followed by `<a class="next" ...>`, a product
page's `<h1 class="name">`, `<span class="sku">`, `<span class="price">` and `<img class="photo">`. What was
added holds no other link a crawler follows: the designs' regexes take every `href="/product/N"` and
`href="/list/N"` on a page, Scrapy and Crawlee every `a` inside a `ul` and the `a.next`, so the navigation's
links are in-page anchors (`#delivery`) outside any list, the breadcrumbs are words, the canonical link is
relative without a leading slash, and there is no stylesheet, script or image to fetch beyond the
product's photo. A full crawl is still one request per listing page and per product.

Where a page is cut in half (the truncate toxic) lands where it did on the old, small pages: before a
product page's SKU and price, and inside a listing page's product list (its notes are sized to balance it).

Pages depend on the catalog version alone, never on the request, so the same version is the same bytes;
only robots.txt and sitemap.xml name the address they were asked at (the sitemap protocol wants whole URLs).
"""

from __future__ import annotations

import functools
import html
import json

from killtest.fixture_site import page_text
from killtest.fixture_site.catalog import Catalog, Product
from killtest.fixture_site.page_style import STYLESHEET

AVAILABILITY = "https://schema.org/InStock"


def home_page() -> str:
    body = (f'<main id="main">\n<h1>{page_text.SHOP_NAME}</h1>\n<p class="page-intro">{page_text.ABOUT}</p>\n'
            '<p><a href="/list/0">All products</a></p>\n</main>')
    return _document(page_text.SHOP_NAME, page_text.ABOUT, "", [], body)


def listing_page(catalog: Catalog, page: int) -> str:
    """Listing page `page` of `catalog` (KeyError when it has no such page)."""
    products, next_page = catalog.listing(page)
    return _listing_page(page, tuple(products), next_page, page * catalog.products_per_page, len(catalog.products),
                         catalog.listing_pages)


# Pages are cached as rendered (about a quarter to half a millisecond each otherwise, on a machine a third as fast
# as a laptop): the site answers each request at the pace it always did. The arguments are all a page depends on.
@functools.lru_cache(maxsize=256)
def _listing_page(page: int, products: tuple[Product, ...], next_page: int | None, first: int, total: int,
                  listing_pages: int) -> str:
    items = "".join(f'<li><a href="{p.path}">Product {p.index}</a></li>' for p in products)
    more = f'<a class="next" href="/list/{next_page}">Next</a>' if next_page is not None else ""
    title = f"All products, page {page + 1} of {listing_pages}"
    item_list = {"@context": "https://schema.org", "@type": "ItemList", "name": title,
                 "numberOfItems": len(products),
                 "itemListElement": [{"@type": "ListItem", "position": position, "url": p.path, "name": p.name}
                                     for position, p in enumerate(products, start=1)]}
    top = (f'<main id="main">\n<h1>All products</h1>\n<p class="page-intro">{page_text.CATALOGUE_INTRO}</p>\n'
           f'<p class="results-count">Showing products {first + 1} to {first + len(products)} of '
           f'{total}, page {page + 1} of {listing_pages}.</p>\n{_filters()}')
    # The list and its next link, exactly as the shop always served them: every crawler parses these.
    listing = f"<ul>{items}</ul>{more}"
    pager = f'\n<p class="pager">Page {page + 1} of {listing_pages}.</p>\n'
    crumbs = ["Shop", "All products", f"Page {page + 1}"]
    head = _head(title, page_text.CATALOGUE_INTRO, str(page), [item_list])
    before = head + _body_top(crumbs) + top
    after_without_notes = pager + _notes_section("") + "</main>\n" + _FOOTER + _END
    # The notes take as many words as put the page's middle inside the list (see the module docstring).
    notes = page_text.notes_of_length(len(before) - len(after_without_notes))
    return before + listing + pager + _notes_section(notes) + "</main>\n" + _FOOTER + _END


@functools.lru_cache(maxsize=1024)
def product_page(item: Product) -> str:
    words = page_text.product_words(item)
    facts = words["facts"]
    description = " ".join(words["paragraphs"])
    data = {"@context": "https://schema.org", "@type": "Product", "name": item.name, "sku": item.sku,
            "description": description, "image": item.image_path, "url": item.path,
            "brand": {"@type": "Brand", "name": page_text.SHOP_NAME},
            "aggregateRating": {"@type": "AggregateRating", "ratingValue": words["rating"],
                                "reviewCount": words["review_count"]},
            "review": [{"@type": "Review", "author": {"@type": "Person", "name": r["author"]},
                        "datePublished": r["date"], "reviewBody": r["body"],
                        "reviewRating": {"@type": "Rating", "ratingValue": r["rating"], "bestRating": 5}}
                       for r in words["reviews"]],
            "offers": {"@type": "Offer", "price": item.price, "priceCurrency": page_text.CURRENCY,
                       "availability": AVAILABILITY, "url": item.path}}
    title = f"{item.name} ({item.sku}), {facts['kind']} in {facts['material']} | {page_text.SHOP_NAME}"
    # The name, SKU, price and photo exactly as the shop always served them: every design parses these.
    summary = (f'<h1 class="name">{item.name}</h1>'
               f'<span class="sku">{item.sku}</span> <span class="price">{item.price}</span>'
               f' <img class="photo" src="{item.image_path}" alt="">')
    paragraphs = "\n".join(f"<p>{_text(p)}</p>" for p in words["paragraphs"])
    features = "".join(f"<li>{_text(f)}</li>" for f in words["features"])
    specs = "\n".join(f'<tr><th scope="row">{name}</th><td>{_text(value)}</td></tr>' for name, value in words["specs"])
    body = (f'<main id="main">\n<article class="product">\n<section class="summary">\n{summary}\n'
            f'<p class="price-note">Price in US dollars ({page_text.CURRENCY}), taxes included. '
            f'<span class="stock">In stock</span>, ready to ship.</p>\n'
            f'<p class="rating">Rated {words["rating"]} out of 5 by {words["review_count"]} customers.</p>\n'
            f'</section>\n<section class="buy-box">\n<h2>Why you will like it</h2>\n'
            f'<ul class="features">{features}</ul>\n'
            f'<p>Free standard delivery on orders over 50 dollars. Thirty days to change your mind.</p>\n'
            f'<h3>Delivery for this item</h3>\n<p>Ships from our warehouse within one working day, packed in '
            f'recycled cardboard. {page_text.DELIVERY}</p>\n'
            f'</section>\n</article>\n<section class="details">\n<h2>Description</h2>\n'
            f'<div class="description">\n{paragraphs}\n</div>\n<h2>Specifications</h2>\n'
            f'<table class="specs">\n{specs}\n</table>\n</section>\n{_reviews(words["reviews"])}'
            f'{_questions(words["questions"])}</main>\n')
    head = _head(title, words["summary"], str(item.index), [data])
    return head + _body_top(["Shop", "All products", item.name]) + body + _FOOTER + _END


def robots_txt(origin: str) -> str:
    """Everything may be crawled; the sitemap is named whole, as the robots.txt standard (RFC 9309) has it."""
    return f"User-agent: *\nAllow: /\n\nSitemap: {origin}/sitemap.xml\n"


def sitemap_xml(catalog: Catalog, origin: str) -> str:
    """Every listing page, then every product page, as whole URLs at `origin` (sitemaps.org protocol)."""
    paths = [f"/list/{n}" for n in range(catalog.listing_pages)] + [p.path for p in catalog.products]
    urls = "".join(f"<url><loc>{html.escape(origin + path)}</loc></url>\n" for path in paths)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{urls}</urlset>\n')


def _text(words: str) -> str:
    return html.escape(words, quote=False)


def _json_ld(data: dict) -> str:
    # "</" could end the script element early; JSON allows "\/" for "/".
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")


def _head(title: str, description: str, canonical: str, data: list[dict]) -> str:
    # The canonical link is relative and has no leading slash ("7" on /product/7): a `href="/product/7"` or
    # `href="/list/7"` would be one more link to the designs' regexes, and the page's own address is not known
    # without the request (the pages are the same bytes at any address).
    canonical_link = f'<link rel="canonical" href="{canonical}">\n' if canonical else ""
    json_ld = "".join(f'<script type="application/ld+json">{_json_ld(d)}</script>\n' for d in data)
    description = html.escape(description)
    return ('<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<title>{html.escape(title, quote=False)}</title>\n'
            f'<meta name="description" content="{description}">\n{canonical_link}'
            '<meta name="robots" content="index, follow">\n'
            f'<meta property="og:site_name" content="{page_text.SHOP_NAME}">\n'
            f'<meta property="og:title" content="{html.escape(title)}">\n'
            f'<meta property="og:description" content="{description}">\n'
            f'<style>\n{STYLESHEET}\n</style>\n{json_ld}</head>\n')


def _body_top(crumbs: list[str]) -> str:
    trail = "".join(f"<li>{_text(c)}</li>" for c in crumbs[:-1]) + f'<li aria-current="page">{_text(crumbs[-1])}</li>'
    return ('<body>\n<a class="skip-link" href="#main">Skip to content</a>\n'
            '<div class="announcement">Free standard delivery on orders over 50 dollars. '
            'Thirty days to change your mind.</div>\n'
            f'<header class="site-header"><div class="inner">\n<div class="brand">{page_text.SHOP_NAME}'
            '<small>Well-made things for the home, the kitchen and the road</small></div>\n'
            # In-page anchors only, and no list around them: see the module docstring.
            '<nav class="site-nav" aria-label="Main"><a href="#main">Catalogue</a> <a href="#delivery">Delivery</a> '
            '<a href="#returns">Returns</a> <a href="#contact">Contact</a></nav>\n'
            '<div class="account"><span>Help: 9 to 6, Monday to Saturday</span></div>\n</div>\n'
            f'<div class="departments" aria-label="Departments">{_DEPARTMENTS}</div>\n</header>\n'
            f'<nav class="breadcrumbs" aria-label="Breadcrumb"><ol>{trail}</ol></nav>\n')


def _reviews(reviews: list[dict]) -> str:
    shown = "\n".join(f'<article class="review"><h3>{r["rating"]} out of 5, from {r["author"]}</h3>'
                      f'<p class="review-date">Written on {r["date"]}</p><p>{_text(r["body"])}</p></article>'
                      for r in reviews)
    return f'<section class="details reviews">\n<h2>Customer reviews</h2>\n{shown}\n</section>\n'


def _questions(questions: list[tuple[str, str]]) -> str:
    asked = "\n".join(f"<dt>{_text(q)}</dt><dd>{_text(a)}</dd>" for q, a in questions)
    return f'<section class="details questions">\n<h2>Questions and answers</h2>\n<dl>\n{asked}\n</dl>\n</section>\n'


def _filters() -> str:
    """The listing's sidebar of filters: checkboxes a person would tick, no links, no form to send."""
    groups = "\n".join(f'<fieldset><legend>{name}</legend>'
                       + "".join(f'<label><input type="checkbox" disabled> {_text(v).capitalize()}</label>'
                                 for v in values) + "</fieldset>" for name, values in page_text.FILTERS)
    return f'<aside class="filters" aria-label="Filters">\n<h2>Filter the range</h2>\n{groups}\n</aside>\n'


def _notes_section(notes: str) -> str:
    return f'<section class="shop-notes">\n<h2>About our range</h2>\n<p>{_text(notes)}</p>\n</section>\n'


_FOOTER = (
    '<footer class="site-footer">\n<div class="inner">\n'
    f'<section id="delivery">\n<h2>Delivery</h2>\n<p>{page_text.DELIVERY}</p>\n</section>\n'
    f'<section id="returns">\n<h2>Returns and repairs</h2>\n<p>{page_text.RETURNS}</p>\n</section>\n'
    f'<section id="contact">\n<h2>Contact</h2>\n<p>{page_text.CONTACT}</p>\n</section>\n'
    f'<section id="about">\n<h2>About us</h2>\n<p>{page_text.ABOUT}</p>\n'
    '<p><a href="#main">Back to top</a></p>\n</section>\n'
    f'</div>\n<p class="legal">{page_text.SHOP_NAME}. Prices in US dollars, taxes included. '
    'This shop is a test fixture of killtest: nothing here is for sale.</p>\n</footer>\n')
_END = "</body>\n</html>\n"
# The departments as words: a link to one would be a page outside the crawl (see the module docstring).
_DEPARTMENTS = "".join(f'<span class="department">{d}</span>' for d in page_text.DEPARTMENTS)


def _document(title: str, description: str, canonical: str, crumbs: list[str], body: str) -> str:
    return _head(title, description, canonical, []) + _body_top(crumbs or ["Shop"]) + body + _FOOTER + _END
