"""Side effects beyond the store, checked against the site's final catalog (seeds/000, "beyond the database").

- Files: each product's image must be on disk, and no two files may hold the same bytes: a design that
  names a download by its content (or its record) overwrites on a repeat instead of adding a copy.
- Webhooks: one notification per record version must reach the receiver, and every repeat must carry
  the key of the first, so the receiver can drop it. A repeat under a new key (or none) is delivered twice.
- The counter: recomputed from the records, it equals the records stored; incremented per fetch, it grows
  with every restart.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field

from killtest.fixture_site.catalog import Catalog
from killtest.harness.check.findings import Finding
from killtest.harness.history import History

PARTIAL_SUFFIXES = (".tmp", ".part", ".partial")


@dataclass
class SideEffects:
    files: int = 0
    duplicate_files: int = 0  # files whose bytes another file holds already
    partial_files: int = 0  # temporary files a killed download left behind
    missing_images: list[str] = field(default_factory=list)  # SKUs whose current image is not on disk
    deliveries: int = 0  # webhook requests received, repeats included
    distinct_keys: int = 0
    # Notifications the receiver cannot drop: the same record version delivered again under another key.
    duplicate_notifications: int = 0
    unnotified: list[str] = field(default_factory=list)  # SKUs whose current version no webhook announced
    counter: float | None = None
    records: int = 0

    def as_figures(self) -> dict:
        """The verdict's `side_effects` field."""
        return asdict(self)


def check_side_effects(history: History, catalog: Catalog, distinct_records: int) -> SideEffects:
    files = history.of_type("side_file")
    by_content = Counter(f["sha256"] for f in files)
    deliveries = history.of_type("webhook")
    keys_per_version: dict[tuple, set] = defaultdict(set)
    unkeyed: Counter[tuple] = Counter()
    for d in deliveries:
        version = (d["payload"].get("sku"), d["payload"].get("price"))
        if d["key"]:
            keys_per_version[version].add(d["key"])
        else:
            unkeyed[version] += 1
    announced = set(keys_per_version) | set(unkeyed)
    counter_event = history.first("store_counter")
    return SideEffects(
        files=len(files),
        duplicate_files=sum(n - 1 for n in by_content.values()),
        partial_files=sum(1 for f in files if f["name"].endswith(PARTIAL_SUFFIXES)),
        missing_images=sorted(p.sku for p in catalog.products if p.image_hash not in by_content),
        deliveries=len(deliveries), distinct_keys=len({d["key"] for d in deliveries if d["key"]}),
        duplicate_notifications=sum(len(k) - 1 for k in keys_per_version.values())
        + sum(n - (0 if keys_per_version.get(v) else 1) for v, n in unkeyed.items()),
        unnotified=sorted(p.sku for p in catalog.products if (p.sku, p.price) not in announced),
        counter=counter_event["value"] if counter_event else None, records=distinct_records)


def side_effect_findings(s: SideEffects) -> list[tuple[Finding, str]]:
    """A (finding, message) per side effect the design got wrong, in the order a verdict lists them."""
    found = []
    if s.missing_images:
        found.append((Finding.MISSING_FILES, f"{len(s.missing_images)} products' current images are not on disk"))
    if s.duplicate_files or s.partial_files:
        found.append((Finding.DUPLICATE_FILES, f"{s.duplicate_files} files repeat another's bytes and"
                                               f" {s.partial_files} are partial downloads: a repeated download"
                                               " added a copy"))
    if s.unnotified:
        found.append((Finding.MISSING_WEBHOOKS, f"{len(s.unnotified)} current records were never announced by a"
                                                " webhook"))
    if s.duplicate_notifications:
        found.append((Finding.DUPLICATE_WEBHOOKS, f"{s.duplicate_notifications} webhooks repeat a record version"
                                                  " under a new key or none: the receiver cannot drop them"))
    if s.counter is not None and s.counter != s.records:
        found.append((Finding.WRONG_COUNTER, f"the design's counter says {s.counter:g}, the store holds {s.records}"
                                             " records"))
    return found
