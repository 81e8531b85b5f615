"""What a design promises: every promise by name, which ones a spec may waive, and the strict default.

A design is held to every promise unless its spec waives one by name (`[design] does_not_promise`,
harness/design/specfile.py); a control (`control = true`) promises nothing. The checker
(harness/check/findings.py) files every finding under one of these promises, and drops the findings
of a promise the design waived, so a verdict never holds a design to less than its spec says and
never to more. This lives on the floor because both the spec reader (design/) and the checker
(check/) need the names, and neither may import the other.
"""

from __future__ import annotations

from enum import Enum


class Promise(Enum):
    """One promise; its value is the name a spec's `does_not_promise` gives and the docs' tables show."""

    FINISHES = "finishes"  # the crawl finishes in time, and no start dies by itself with an error
    PROVES_SOMETHING = "proves_something"  # the run itself: kills landed and bit, every check could judge
    NO_LOST_RECORDS = "no_lost_records"
    NO_DUPLICATES = "no_duplicates"
    CORRECT_VALUES = "correct_values"
    ONLY_SITE_RECORDS = "only_site_records"
    BOUNDED_REQUESTS = "bounded_requests"
    HONOURS_RETRY_AFTER = "honours_retry_after"
    TRUTHFUL_CHANGES = "truthful_changes"
    RELEASES_LEASES = "releases_leases"
    IDEMPOTENT_SIDE_EFFECTS = "idempotent_side_effects"
    FENCED_WRITES = "fenced_writes"  # no zombie writer: a commit needs the claim to be still its own


# What each promise holds a design to, in one line: the spec docs' table and error messages read it.
MEANING: dict[Promise, str] = {
    Promise.FINISHES: "the crawl finishes within the time limit and no start exits by itself with an error",
    Promise.PROVES_SOMETHING: "the run proves something: a kill landed on a start at work, a control shows"
                              " duplicates, every check could judge the run (the harness's own, not waivable)",
    Promise.NO_LOST_RECORDS: "every product on the site is stored",
    Promise.NO_DUPLICATES: "one row per product, whatever the kills",
    Promise.CORRECT_VALUES: "every stored value is one the site shows, and every row can be read",
    Promise.ONLY_SITE_RECORDS: "no stored record the site does not have",
    Promise.BOUNDED_REQUESTS: "no more requests than a full crawl plus one per kill (per worker) and one per"
                              " network fault; no page fetched again once stored, or twice by one start",
    Promise.HONOURS_RETRY_AFTER: "no request sooner than a 429's Retry-After asked",
    Promise.TRUTHFUL_CHANGES: "a record's last change moves when, and only when, the site changed it",
    Promise.RELEASES_LEASES: "a start that says it is done holds no claim",
    Promise.IDEMPOTENT_SIDE_EFFECTS: "files, webhooks and counters match the records, none repeated or missing"
                                     " (for a design with side_effects = true)",
    Promise.FENCED_WRITES: "no write commits after its lease ran out and another worker claimed the page (a zombie"
                           " writer woken from a pause); judged for a design that reports its claims and commits",
}

# Promises about the run, not the design: no spec can waive them.
NOT_WAIVABLE = frozenset({Promise.FINISHES, Promise.PROVES_SOMETHING})
WAIVABLE = frozenset(Promise) - NOT_WAIVABLE
# What the old `claims_idempotence = false` meant: the design was held to lost, wrong and foreign
# records (and Retry-After), not to these. Old specs keep their meaning through this set.
IDEMPOTENCE = frozenset({Promise.NO_DUPLICATES, Promise.BOUNDED_REQUESTS, Promise.TRUTHFUL_CHANGES,
                         Promise.RELEASES_LEASES})


def promise_named(name: str) -> Promise | None:
    """The waivable promise called `name`, or None."""
    return next((p for p in WAIVABLE if p.value == name), None)


def waivable_names() -> list[str]:
    """The names a spec's does_not_promise may give, in the order of the enum."""
    return [p.value for p in Promise if p in WAIVABLE]
