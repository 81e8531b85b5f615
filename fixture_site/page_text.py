"""The shop's words: a product's description, features and specifications, made from its SKU, and the
shop's own text (delivery, returns, contact, the catalogue's introduction).

Every word is drawn from a random.Random seeded with the product's SKU (or a fixed name for the shop's
text), so a page is the same bytes for the same catalog version, whatever machine serves it, and a
repriced product keeps its description. The text is there for its weight and its visible words: a
crawler built for real shops (crawl4ai's anti-bot check, fixture_site/pages.py) judges a page by them.
Nothing here is markup a design parses: the SKU, price and name stay in the page's own elements.
"""

from __future__ import annotations

import functools
import random

from killtest.fixture_site.catalog import Product

SHOP_NAME = "Killtest Supply Co."
CURRENCY = "USD"

_KINDS = ("kettle", "desk lamp", "backpack", "chef's knife", "rain jacket", "coffee grinder", "wool blanket",
          "water bottle", "notebook", "bicycle light", "cast-iron pan", "reading chair", "tea set", "tool roll",
          "camping stove", "wall clock", "linen shirt", "garden hose", "speaker", "travel mug")
_MATERIALS = ("brushed stainless steel", "recycled aluminium", "oiled walnut", "waxed canvas", "borosilicate glass",
              "full-grain leather", "organic cotton", "merino wool", "powder-coated steel", "glazed stoneware",
              "solid oak", "ripstop nylon", "bamboo fibre", "enamelled cast iron")
_COLOURS = ("graphite", "sand", "forest green", "slate blue", "terracotta", "natural", "charcoal", "oat",
            "ochre", "midnight", "sage", "brick red")
_USES = ("everyday use at home", "long weekends away", "a small kitchen", "the workshop", "the office desk",
         "cold mornings outside", "a first flat", "gifting", "daily commuting", "slow Sunday breakfasts")
_QUALITIES = ("sturdy", "quiet", "easy to clean", "light", "well balanced", "repairable", "compact",
              "hard-wearing", "comfortable", "precise", "warm", "simple to set up")
_ORIGINS = ("Portugal", "Japan", "Korea", "Germany", "Italy", "Sweden", "Taiwan", "Poland", "Canada", "Vietnam")
_OPENINGS = (
    "{name} is a {quality} {kind} in {material}, made for {use}.",
    "Meet {name}: a {kind} in {material} that stays {quality} through years of {use}.",
    "{name} is our {colour} {kind}, built in {origin} from {material} for {use}.",
)
_SENTENCES = (
    "Every piece is checked by hand before it leaves the workshop, and the finish is {quality} from the first day.",
    "The {material} body ages well: small marks of use become part of its character rather than flaws.",
    "It was designed with a small team in {origin}, who tested it for months of {use} before it went on sale.",
    "We chose {material} because it is {quality}, easy to repair and kind to the hands that use it.",
    "The {colour} finish is applied in two thin coats, so it wears evenly and never flakes.",
    "Spare parts are kept in stock for at least ten years, and our repair guide is included in the box.",
    "Customers tell us it is the {kind} they reach for first, and the one they recommend to friends.",
    "It packs flat, ships in recycled cardboard without plastic fillers, and is ready to use in minutes.",
    "Each batch is small, so the grain, weave or glaze of yours may differ a little from the photograph.",
    "If it does not suit you, send it back within thirty days for a full refund, no questions asked.",
    "The edges are rounded and the seams are sealed, which makes it {quality} and easy to look after.",
    "A {colour} version is made in the same workshop for those who prefer a quieter look.",
)
_REVIEWERS = ("Minji", "Tomasz", "Aiko", "Lucas", "Priya", "Jonas", "Seo-yeon", "Marta", "Daniel", "Hana", "Ines",
              "Kwame", "Olivia", "Ravi", "Sofia", "Wen")
_REVIEW_LINES = (
    "Arrived in two days, well packed and exactly as described.",
    "The {material} feels far better in the hand than the photographs suggest.",
    "I bought it for {use} and it has not let me down once.",
    "It is {quality}, which was the main thing I was looking for in a {kind}.",
    "The {colour} colour is a little darker in person, which I prefer.",
    "Customer service answered my question about care within a few hours.",
    "After three months of daily use it still looks new.",
    "Slightly more expensive than others, but it is clearly made to last.",
    "My second one: the first went to my sister, who loved it.",
    "Instructions were short and clear, and it was ready in minutes.",
)
_QUESTIONS = (
    ("Can I get spare parts for it?", "Yes: we keep spare parts for at least ten years. Write to us with the item "
                                       "number and we will send what you need."),
    ("Is the {material} treated with anything?", "Only with a food-safe finish where it touches food or skin; the "
                                                  "care guide in the box says how to renew it."),
    ("How is it packed?", "In recycled cardboard with paper padding, no plastic. The box is sized to the item, so "
                          "nothing rattles on the way."),
    ("Does the {colour} colour fade?", "Not in normal use indoors. Long hours of direct sun will soften it a "
                                       "little over the years, as with any natural finish."),
    ("Can I return it if I have opened the box?", "Yes, within thirty days, as long as it is unused. Keep the "
                                                   "packaging if you can: it protects the item on its way back."),
    ("Is it suitable for {use}?", "It was designed with exactly that in mind, and our testers used it so for "
                                  "several months before it went on sale."),
    ("Where is it made?", "In a small workshop in {origin} that we have worked with for years and visit at least "
                          "once a year."),
)
_CARE = ("Wipe clean with a damp cloth.", "Hand wash in warm water and dry at once.",
         "Oil lightly twice a year.", "Machine wash at 30 degrees, dry flat.", "Store somewhere dry.")
_WARRANTY_YEARS = (2, 3, 5, 10)


def product_words(product: Product) -> dict:
    """A product's description paragraphs, feature list and specification rows, drawn from its SKU alone
    (a new price leaves its words as they were)."""
    rng = random.Random(f"killtest-page:{product.sku}")
    facts = {"name": product.name, "kind": rng.choice(_KINDS), "material": rng.choice(_MATERIALS),
             "colour": rng.choice(_COLOURS), "use": rng.choice(_USES), "quality": rng.choice(_QUALITIES),
             "origin": rng.choice(_ORIGINS)}
    paragraphs = [rng.choice(_OPENINGS).format(**facts)]
    for _ in range(3):
        sentences = rng.sample(_SENTENCES, 3)
        paragraphs.append(" ".join(s.format(**{**facts, "quality": rng.choice(_QUALITIES)}) for s in sentences))
    width, depth, height = (rng.randint(8, 60) for _ in range(3))
    specs = [("Material", facts["material"].capitalize()), ("Colour", facts["colour"].capitalize()),
             ("Dimensions", f"{width} x {depth} x {height} cm"), ("Weight", f"{rng.randint(120, 9_500)} g"),
             ("Made in", facts["origin"]), ("Care", rng.choice(_CARE)),
             ("Warranty", f"{rng.choice(_WARRANTY_YEARS)} years"), ("Item number", product.sku)]
    features = [f"{q.capitalize()} {facts['kind']} for {u}" for q, u in
                zip(rng.sample(_QUALITIES, 4), rng.sample(_USES, 4), strict=True)]
    reviews = [{"author": rng.choice(_REVIEWERS), "rating": rng.randint(3, 5),
                "date": f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}",
                "body": " ".join(r.format(**facts) for r in rng.sample(_REVIEW_LINES, 3))} for _ in range(5)]
    questions = [(q.format(**facts), r.format(**facts)) for q, r in rng.sample(_QUESTIONS, 4)]
    return {"facts": facts, "paragraphs": paragraphs, "questions": questions, "specs": specs, "features": features,
            "reviews": reviews,
            "summary": paragraphs[0], "rating": round(rng.uniform(3.6, 5.0), 1), "review_count": rng.randint(5, 480)}


# The shop's own sections, on every page (the navigation's in-page links lead to them).
DELIVERY = (
    "Orders placed before two in the afternoon leave our warehouse the same working day. Standard delivery "
    "takes two to four working days and is free on orders over 50 dollars; express delivery arrives the next "
    "working day. Every parcel is tracked, and you will receive an email with the tracking link as soon as it "
    "is on its way. We ship to most countries in Europe, North America and East Asia; duties are calculated "
    "at checkout so there is nothing more to pay at the door.")
RETURNS = (
    "You may return anything within thirty days of delivery, unused and in its original packaging, for a full "
    "refund. Print the prepaid label from your order page, pack the item securely and drop it at any post "
    "office. Refunds are made to the original payment method within five working days of the parcel reaching "
    "us. Faulty items are replaced or repaired free of charge for the whole of their warranty.")
CONTACT = (
    "Our customer service team answers every message within one working day, Monday to Saturday, nine to six. "
    "Write to us with your order number and we will help with delivery questions, returns, repairs and "
    "product advice. Trade and wholesale enquiries are welcome too.")
ABOUT = (
    "Killtest Supply Co. sells a small range of well-made things for the home, the kitchen and the road. We "
    "work directly with the workshops that make them, visit each one at least once a year, and keep spare "
    "parts for everything we sell.")
# The catalogue's departments and filters, as a real shop's menu and listing sidebar show them (words here: a
# link to a department would be a page outside the crawl).
DEPARTMENTS = ("Kitchen", "Home", "Outdoors", "Travel", "Workshop", "Clothing", "Stationery", "Gifts", "New in",
               "Repairs and spare parts")
FILTERS = (("Department", DEPARTMENTS[:8]), ("Material", _MATERIALS), ("Colour", _COLOURS),
           ("Made in", _ORIGINS), ("Price", ("Under 25 dollars", "25 to 100 dollars", "100 to 250 dollars",
                                             "250 to 500 dollars", "Over 500 dollars")))
CATALOGUE_INTRO = (
    "Browse the whole range, page by page. Every product is in stock and ready to ship; prices include taxes. "
    "Open a product for its full description, specifications, care instructions and delivery options.")


@functools.lru_cache(maxsize=1)
def shop_notes() -> str:
    """Notes on the shop, a few thousand words long: listing pages show as much of them as their balance
    needs (fixture_site/pages.py). The same words every time."""
    rng = random.Random("killtest-page:shop-notes")
    notes = []
    for _ in range(100):
        facts = {"name": "Our range", "kind": rng.choice(_KINDS), "material": rng.choice(_MATERIALS),
                 "colour": rng.choice(_COLOURS), "use": rng.choice(_USES), "quality": rng.choice(_QUALITIES),
                 "origin": rng.choice(_ORIGINS)}
        notes.append(" ".join(s.format(**facts) for s in rng.sample(_SENTENCES, 2)))
    return " ".join(notes)


def notes_of_length(length: int) -> str:
    """The start of shop_notes(), cut at the last whole word that fits in `length` characters ("" for 0)."""
    text = shop_notes()
    if length <= 0:
        return ""
    if length >= len(text):
        return text
    cut = text.rfind(" ", 0, length + 1)
    return text[:cut] if cut > 0 else ""
