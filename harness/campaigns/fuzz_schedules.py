"""Hypothesis strategies for kill schedules that mix every kind of point a design can take.

A schedule is one to three points; each point is drawn from the kinds that apply to the design:
request (`r5`, before the answer), after the answer (`r5+`), store write (`w45`, from the first
start's recording), after a store write (`aw45`, its after twin: killed once it is done, before the next durable
step: harness/faults/points/after_store_write.py), commit-path line (`l:...`, Python modules), timed (`t0.05`), redeploy
(`d0.05:0.02`), pause (`p0.05:0.2`, SIGSTOP then SIGCONT) and store-server restart (`s0.1`, PostgreSQL
and Redis stores). With `power_cut` (`--power-cut`), the power-cut twins of the request, store-write and
timed kinds too (`xr5`, `xr5+`, `xw45`, `x0.05`: harness/faults/points/power_cut.py), listed after every
other kind: without `power_cut` the list of kinds, and so every draw of a seed, is what it was. Catalogs are small:
1-3 listing pages of 1-4 products.

`exact` tells whether a point gives the same outcome on every repeat: a timed point, a redeploy, a
pause, a server restart, and an `r5+` that could not be aimed at a write (a server store) race the scraper.
Only exact points are shrunk (harness/campaigns/fuzzing.py), so a shrunk failure always reproduces.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence

from hypothesis import strategies as st

from killtest.harness.campaigns.exploration import commit_path_lines
from killtest.harness.design.model import Design
from killtest.harness.design.stores import kind_of
from killtest.harness.faults.points import KillPoint
from killtest.harness.faults.points.after_store_write import AfterStoreWrite
from killtest.harness.faults.points.line import AtLine, anchor_for
from killtest.harness.faults.points.pause import Pause
from killtest.harness.faults.points.power_cut import PowerCutAfterDelay, PowerCutAtRequest, PowerCutAtStoreWrite
from killtest.harness.faults.points.redeploy import Redeploy
from killtest.harness.faults.points.request import AtRequest
from killtest.harness.faults.points.server_restart import ServerRestart
from killtest.harness.faults.points.store_write import AtStoreWrite
from killtest.harness.faults.points.timed import AfterDelay
from killtest.harness.faults.schedule import KillSchedule, order_problem

LISTING_PAGES = (1, 3)  # the range of a fuzzed catalog's listing pages
PER_PAGE = (1, 4)  # and of its products per page
MAX_POINTS = 3
LINE_HITS = (1, 2, 3)
DELAYS_S = (0.02, 0.05, 0.1, 0.2)  # short: a small catalog is crawled in a fraction of a second
PAUSES_S = (0.05, 0.2, 1.0)  # SIGSTOP to SIGCONT: the longest outlasts a short lease


def file_store(design: Design) -> bool:
    """Whether store writes can be aimed at: a file store, and strace on this machine."""
    return kind_of(design.store.kind).server is None and shutil.which("strace") is not None


def exact(point: KillPoint, design: Design) -> bool:
    """Whether `point` gives the same outcome on every repeat of the same schedule."""
    if isinstance(point, AtRequest):
        return not point.after_response or file_store(design)
    return isinstance(point, (AtStoreWrite, AtLine))


def store_write(index: int, after: bool) -> AtStoreWrite:
    """`w45`, or its after twin `aw45`."""
    return AfterStoreWrite(index) if after else AtStoreWrite(index)


def catalog_sizes() -> st.SearchStrategy[tuple[int, int]]:
    return st.tuples(st.integers(*LISTING_PAGES), st.integers(*PER_PAGE))


def kill_points(design: Design, requests: int, store_writes: Sequence[int], lines: Sequence[AtLine],
                exact_only: bool = False, power_cut: bool = False) -> st.SearchStrategy[KillPoint]:
    """One point of any kind the design takes, on a catalog of `requests` requests.

    `store_writes` are the write numbers strace can aim at in a first start (from a recording);
    `lines` the commit-path lines of a Python design; `power_cut` adds the power-cut kinds, last."""
    kinds: list[st.SearchStrategy[KillPoint]] = [st.builds(AtRequest, st.integers(1, requests))]
    if file_store(design) or not exact_only:
        kinds.append(st.builds(AtRequest, st.integers(1, requests), st.just(True)))
    if store_writes and file_store(design):
        # One kind, before or after the write drawn in it: the other kinds' draws stay what they were.
        kinds.append(st.builds(store_write, st.sampled_from(list(store_writes)), st.booleans()))
    if lines:
        kinds.append(st.sampled_from(list(lines)))
    if not exact_only:
        kinds.append(st.builds(AfterDelay, st.sampled_from(DELAYS_S)))
        kinds.append(st.builds(Redeploy, st.sampled_from(DELAYS_S), st.sampled_from((0.0, 0.02))))
        kinds.append(st.builds(Pause, st.sampled_from(DELAYS_S), st.sampled_from(PAUSES_S)))
        if kind_of(design.store.kind).server is not None:
            kinds.append(st.builds(ServerRestart, st.sampled_from(DELAYS_S)))
    if power_cut:  # last, and only when asked: without them a seed draws what it always drew
        kinds.append(st.builds(PowerCutAtRequest, st.integers(1, requests)))
        if file_store(design) or not exact_only:
            kinds.append(st.builds(PowerCutAtRequest, st.integers(1, requests), st.just(True)))
        if store_writes and file_store(design):
            kinds.append(st.builds(PowerCutAtStoreWrite, st.sampled_from(list(store_writes))))
        if not exact_only:
            kinds.append(st.builds(PowerCutAfterDelay, st.sampled_from(DELAYS_S)))
    return st.one_of(kinds)


def kill_schedules(design: Design, requests: int, store_writes: Sequence[int] = (),
                   lines: Sequence[AtLine] = (), exact_only: bool = False,
                   power_cut: bool = False) -> st.SearchStrategy[KillSchedule]:
    """One to three points, each ending one start; the start after the last runs to the end."""
    # A point set up when its start is spawned never fires after a pause (schedule.order_problem): not drawn.
    return st.lists(kill_points(design, requests, store_writes, lines, exact_only, power_cut), min_size=1,
                    max_size=MAX_POINTS).filter(lambda points: order_problem(points) is None).map(
        lambda points: KillSchedule(seed=None, points=tuple(points)))


def line_points(design: Design) -> list[AtLine]:
    """The commit-path lines of a Python design at their 1st-3rd execution, named by function and offset."""
    if design.module is None or not design.commit_path:
        return []
    return [AtLine(path, line, hit, anchor=anchor_for(path, line))
            for path, line in commit_path_lines(design) for hit in LINE_HITS]
