"""What an exploration covered, and what it left out and why: the pages it killed at, the store writes it saw
per kind of file, and the writes it offered no point for.

A user reads `9 crash points, 0 broken` as "every place was tried". It is not, when a browser's own requests
took request points' numbers (they no longer do: killtest.fixture_site.request_log) or when the writes of a
file strace cannot count the same way twice were dropped without a word. So explore says, beside its
verdict: the distinct pages its request points killed at, out of the pages one crawl asks for; for each kind
of file the first start wrote (file numbers folded: `datasets/N.json`), how many writes it saw and how many
it made points of, and how many of those it killed after as well as before (their after twins, `aw5`); and a
sentence for every write or kind of point it left out. Plain data, from the
points' outcomes and the recordings that aimed them (harness/running/write_plans.py); its words are
harness/report/coverage_words.py's.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from typing import Any

from killtest.harness.faults.file_aims import named_by_id, number_of, offered_writes
from killtest.harness.faults.file_roles import ROLES, STORE, file_kind, file_role, store_path
from killtest.harness.faults.points.after_store_write import AfterStoreWrite
from killtest.harness.faults.points.store_write import server_store
from killtest.harness.faults.store_writes import Recording, agreeing_writes

# Why a store write a recording saw is not a point (store_writes.py: strace counts per thread and system call).
UNREACHABLE = ("strace cannot stop at them by their place (it counts each thread's calls apart, and another thread"
               " reaches the same count first), nor by their file (the calls naming it differed on a second recording)")
NAMED_BY_ID = ("their files are named by an id or at random (a hash of a URL, which holds the site's port; a"
               " temporary file's random name): another start names them otherwise, so neither their place in the"
               " start's order nor their file names them on a replay")
UNSTABLE = ("a second recording of the start made other writes in their places (threads racing, a timer, a file"
            " named by pid, port or at random): a replay of such a point would kill elsewhere")


def exploration_coverage(outcomes: list, pages_asked: int, recording: Any, again: Any, *, points_given: bool,
                         why_no_writes: str = "", store: str = "") -> dict:
    """The coverage of an exploration: `outcomes` (PointOutcome, with `page`), the pages one full crawl asks for,
    the two recordings of the first start (`recording`, `again`: store_writes.Recording, a server store's
    statement list, or None); `points_given`: the points came from --only; `why_no_writes`: why no store write
    was recorded at all (no strace, several workers), when so; `store`: the store's path (file_roles.store_path), which
    tells the store's files from the crawler's state, logs and caches (a kind of file not the store's says `role`)."""
    killed_at = sorted({o.page for o in outcomes if o.landed and o.point.startswith("r") and o.page},
                       key=_page_order)
    afters = [point for o in outcomes if o.point.startswith(AfterStoreWrite.PREFIX)
              and (point := AfterStoreWrite.parse(o.point)).server is None]
    left_out: list[str] = []
    writes: list[dict] = []
    if points_given:
        left_out.append("only the points given with --only were run: no recording listed the store's writes")
    elif why_no_writes:
        left_out.append(f"no store-write points: {why_no_writes}")
    elif isinstance(recording, Recording):
        offered = (set(offered_writes(recording, again, agreeing_writes(recording, again)))
                   if isinstance(again, Recording) else set())
        writes, left_out = _file_writes(recording, offered,
                                        {number_of(recording, point.index, point.file) for point in afters}, store)
    elif recording is not None:  # a server store's counted statements: (connection, label) in order
        stable = sum(1 for o in outcomes if re.fullmatch(r"w\d+(:c\d+)?", o.point))
        writes = [{"file": "statements to the store's server", "seen": len(recording), "points": stable,
                   "after_points": len(afters), "left_out": len(recording) - stable}]
        if len(recording) > stable:
            left_out.append(f"{len(recording) - stable} statements to the store's server: not the same on two"
                            " recordings of the first start (a timer's or a poll's), so not offered")
    else:
        left_out.append("no store write recorded: the first start wrote nothing to its store before it ended")
    requests = sum(1 for o in outcomes if o.point.startswith("r") and not o.point.endswith("+"))
    if not points_given and requests < pages_asked:
        left_out.append(f"{pages_asked - requests} of the crawl's {pages_asked} requests have no request point")
    return {"pages_asked": pages_asked, "pages_killed_at": killed_at, "writes": writes, "left_out": left_out}


def _file_writes(recording: Recording, offered: set[int], after: set[int | None],
                 store: str = "") -> tuple[list[dict], list[str]]:
    """Per kind of file: writes seen, offered, killed after (`after`: the n of the after twins explored), left out;
    and a sentence per reason something was left out."""
    reachable = set(recording.reachable_writes())
    seen: Counter[str] = Counter()
    points: Counter[str] = Counter()
    afters: Counter[str] = Counter()
    unreachable: Counter[str] = Counter()
    unstable: Counter[str] = Counter()
    by_id: Counter[str] = Counter()
    roles: dict[str, str] = {}
    for n, call in enumerate(recording.calls, 1):
        kind = file_kind(call.paths)
        seen[kind] += 1
        roles.setdefault(kind, file_role(call.paths[-1] if call.paths else "", store))
        if n in offered:
            points[kind] += 1
            afters[kind] += n in after
        elif all(named_by_id(p) for p in call.paths if p):
            by_id[kind] += 1
        elif n not in reachable:
            unreachable[kind] += 1
        else:
            unstable[kind] += 1
    writes = [{"file": kind, "seen": seen[kind], "points": points[kind], "after_points": afters[kind],
               "left_out": seen[kind] - points[kind], **({"role": roles[kind]} if roles[kind] != STORE else {})}
              for kind in sorted(seen, key=lambda k: (ROLES.index(roles[k]), -seen[k], k))]  # the store's first
    left_out = [_left_out(counts, why) for counts, why in ((unreachable, UNREACHABLE), (unstable, UNSTABLE),
                                                                  (by_id, NAMED_BY_ID)) if counts]
    return writes, left_out


def _left_out(counts: Counter[str], why: str) -> str:
    """`28 writes (21 to queue/N.json, 7 to datasets/N.json): why`, the most numerous kind of file first."""
    total = sum(counts.values())
    kinds = ", ".join(f"{n} to {kind}" for kind, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    return f"{total} write{'s' if total != 1 else ''} ({kinds}): {why}"


def _page_order(path: str) -> tuple:
    """Listing pages first, then products, each by number, as a crawl asks for them."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path))


def covered(design: Any, outcomes: list, catalog: Any, settings: Any, cache: dict, given: bool) -> dict:
    """An exploration's coverage from the recordings that listed its store writes (write_plans' `cache`); `given`:
    the points came from --only."""
    if settings.workers > 1:
        why = "the design runs several workers, and a store write is aimed at one start's"
    elif not server_store(design) and shutil.which("strace") is None:
        why = "strace is not installed (apt-get install strace)"
    else:
        why = ""
    found = exploration_coverage(outcomes, catalog.full_crawl_requests, cache.get((design.name, "")),
                                 cache.get((design.name, "#again")), points_given=given, why_no_writes=why,
                                 store=store_path(design.store.path))
    for server in getattr(design, "servers", ()):  # the write commands to each server it declares (`w3:redis`)
        commands = cache.get((design.name, f"#{server}"))
        if commands is None:
            continue
        points = sum(1 for o in outcomes if re.fullmatch(rf"w\d+:{server}", o.point))
        after = sum(1 for o in outcomes if re.fullmatch(rf"aw\d+:{server}", o.point))
        found["writes"].append({"file": f"the declared {server} server (its write commands)", "seen": len(commands),
                                "points": points, "after_points": after, "left_out": len(commands) - points})
        if len(commands) > points:
            found["left_out"].append(f"{len(commands) - points} commands to the declared {server} server: after the"
                                     " first that differed on two recordings of the first start (threads, a timer),"
                                     " so not offered")
    return found

