"""What the site's network faults did in a run, read from the history (killtest.fixture_site.toxics injects them).

The checker tells a design that retried safely (every record right, one extra request per fault at
most) from one that stored a broken record (`wrong_value`), gave up (`lost`, `crashed`) or came back
sooner than a 429's Retry-After asked (`ignored_retry_after`).
"""

from __future__ import annotations

import bisect
from collections import Counter

from killtest.fixture_site.toxics import parse_toxics
from killtest.fixture_site.toxics.throttle import STATUS as THROTTLE_STATUS
from killtest.harness.check.categories import required_event
from killtest.harness.history import History

# Requests that arrive this soon after a 429 were already on their way (another worker, another slot).
IN_FLIGHT_S = 0.05
# A request this much earlier than Retry-After allows still counts as waiting (clock and timer slack).
RETRY_AFTER_SLACK_S = 0.1


def fault_counts(history: History) -> dict[str, int]:
    """How many requests met each kind of fault."""
    return dict(sorted(Counter(r["fault"] for r in history.of_type("request") if r.get("fault")).items()))


def early_after_throttle(history: History) -> int:
    """Requests that arrived after a 429 was answered but sooner than its Retry-After allowed.

    Measured from the 429's arrival, so a client that waits from the answer is never counted.
    """
    spec = required_event(history, "run_started").get("toxics")
    if not spec:
        return 0
    retry_after_s = parse_toxics(spec).setting("retry_after")
    requests = history.of_type("request")
    arrivals = sorted(r["t"] for r in requests)
    # The windows each 429 forbids, overlapping ones joined, then the arrivals inside them by bisection:
    # a 50,000-page run with thousands of 429s is not a product of the two.
    windows: list[list[float]] = []
    for t in sorted(r["t"] for r in requests if r["status"] == THROTTLE_STATUS):
        since, until = t + IN_FLIGHT_S, t + retry_after_s - RETRY_AFTER_SLACK_S
        if until <= since:
            continue
        if windows and since <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], until)
        else:
            windows.append([since, until])
    return sum(bisect.bisect_left(arrivals, until) - bisect.bisect_right(arrivals, since) for since, until in windows)


def faulted_paths(history: History) -> set[str]:
    return {r["path"] for r in history.of_type("request") if r.get("fault")}
