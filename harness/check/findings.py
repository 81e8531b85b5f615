"""Every finding the checker can report: a code, the promise it broke (killtest.harness.promises), and one line.

Hypothesis's HealthCheck is the model: an Enum whose members carry their own description, so the
reference table in the docs is generated from this file and cannot drift from the checker. The code
(a member's value) is what result files, baselines and the bug zoo's `expect` keys hold; never
rename one without a migration, saved baselines compare by it.

Members keep their historical order (the zoo's spec error lists the codes in it); the order in which
a verdict reports them is the order of the checks, killtest.harness.check.named_checks.CHECKS.
"""

from __future__ import annotations

from enum import Enum

from killtest.harness.promises import Promise

__all__ = ["FINDINGS", "Finding", "Promise"]


class Finding(Enum):
    """One broken promise; `Finding.LOST.value == "lost"` is its code, `.description` its one line."""

    LIVENESS = ("liveness", Promise.FINISHES, "the crawl did not finish in time; what it had not"
                 " stored is counted as not stored because it did not finish, never as lost")
    CRASHED = ("crashed", Promise.FINISHES, "a start exited by itself with an error")
    NO_KILL_LANDED = ("no_kill_landed", Promise.PROVES_SOMETHING, "no kill landed on a start at work")
    LOST = ("lost", Promise.NO_LOST_RECORDS, "a product on the site was missing from the store"
             " after a crawl that finished, or after a start that crashed (exited with an error before storing it)")
    WRONG_VALUE = ("wrong_value", Promise.CORRECT_VALUES, "a stored value other than the one the final crawl's last"
                   " fetch of its page was served (the site's at the end, for a page that crawl did not fetch)")
    NOT_ON_SITE = ("not_on_site", Promise.ONLY_SITE_RECORDS,
                   "a stored record the site does not have, nor had when the final crawl fetched its page")
    UNREADABLE = ("unreadable", Promise.CORRECT_VALUES, "a stored row that could not be read")
    EXTRA_ROWS = ("extra_rows", Promise.NO_DUPLICATES, "more rows than products")
    EXCESS_REQUESTS = ("excess_requests", Promise.BOUNDED_REQUESTS, "more requests than a full crawl plus one per kill")
    REFETCHED_AFTER_COMMIT = ("refetched_after_commit", Promise.BOUNDED_REQUESTS,
                              "a page fetched again after its record was stored")
    FETCHED_TWICE_BY_ONE_START = ("fetched_twice_by_one_start", Promise.BOUNDED_REQUESTS,
                                  "a page fetched twice by one start")
    REWROTE_UNCHANGED = ("rewrote_unchanged", Promise.TRUTHFUL_CHANGES,
                         "an unchanged record rewritten (its last change moved)")
    LEFT_LEASES = ("left_leases", Promise.RELEASES_LEASES, "a start finished with claims still held")
    IGNORED_RETRY_AFTER = ("ignored_retry_after", Promise.HONOURS_RETRY_AFTER,
                           "a request sooner than a 429's Retry-After asked")
    MISSED_CHANGE = ("missed_change", Promise.TRUTHFUL_CHANGES,
                     "a record whose last_changed is older than the site's last change the crawl was served")
    MISSING_FILES = ("missing_files", Promise.IDEMPOTENT_SIDE_EFFECTS, "a product's current image not on disk")
    DUPLICATE_FILES = ("duplicate_files", Promise.IDEMPOTENT_SIDE_EFFECTS,
                       "a downloaded file that repeats another's bytes, or a partial download left behind")
    MISSING_WEBHOOKS = ("missing_webhooks", Promise.IDEMPOTENT_SIDE_EFFECTS, "a current record no webhook announced")
    DUPLICATE_WEBHOOKS = ("duplicate_webhooks", Promise.IDEMPOTENT_SIDE_EFFECTS,
                          "a record version announced again under a new idempotency key, or none")
    WRONG_COUNTER = ("wrong_counter", Promise.IDEMPOTENT_SIDE_EFFECTS,
                     "a counter that does not equal the records stored")
    CONTROL_WITHOUT_DUPLICATES = ("control_without_duplicates", Promise.PROVES_SOMETHING,
                                  "the naive control kept no duplicate")
    ZOMBIE_WRITE = ("zombie_write", Promise.FENCED_WRITES,
                    "a write committed after its lease ran out and another worker had claimed the page")
    # Not a promise of the design: the harness's own check raised, so the run's verdict is unknown
    # (Jepsen's check-safe). Last, so the codes listed before it keep their historical order.
    CHECK_FAILED = ("check_failed", Promise.PROVES_SOMETHING, "a check raised an error, so the run could not be judged")
    # A recorded site only: the scraper asked for a URL the recording does not hold; the replay answered 404
    # and forwarded nothing, so the run did not meet the site the reference was made on (unknown, not invalid).
    UNRECORDED_REQUEST = ("unrecorded_request", Promise.PROVES_SOMETHING,
                          "a request the recording does not hold (answered 404, never forwarded)")

    # A lost record whose page the finished crawl had fetched and never fetched again: the surviving store
    # marks done a page whose record it lost (RocksDB's "hole"); check/holes.py. After the others: codes keep order.
    HOLE = ("hole", Promise.NO_LOST_RECORDS, "a lost record whose page the finished crawl had fetched and never"
            " fetched again: the store marks done a page whose record it lost")

    promise: Promise
    description: str

    def __new__(cls, code: str, promise: Promise, description: str) -> Finding:
        member = object.__new__(cls)
        member._value_ = code
        member.promise = promise
        member.description = description
        return member


# Code -> description, the form the zoo's spec check and older callers read.
FINDINGS: dict[str, str] = {finding.value: finding.description for finding in Finding}
