"""Where a run's timed kills landed, as exact points: the schedule whose replay kills at the same places.

A timed kill (`t0.43`, `f0.2:5`) lands wherever the crawl happens to be at that moment, so its replay line lands
elsewhere on another run: a run that lost 432 records may replay as one that lost 106 and did not crash. The
run's history says where each kill landed in the crawl's own terms: after the killed start's k-th request, and
before or after the store's first change since. Before it, `r<k>+` kills at the first store write after request k
(write_plans aims it exactly); after it, `r<k+1>` kills on the next request, before its answer. A kill that came
while the site still held request k (paced, slow: its answer reached no one, `undelivered`) is `r<k>`, on that
request before its answer. A kill before the start's first request is `r1`. Exact points of the schedule (`r5`,
`w12`, a line point) are kept as they are.

The store's change is read from the kill event's `store_mtime_ns` (the store's files, just after the kill:
running/kill_state.py) against the request's time; a store on a server has none, and then the kill is taken as
before the write (`r<k>+`). What the replay of the exact schedule finds is the test of it: `killtest replay`
says whether it reproduced the failure (cli/replay.py).

Pure: a History in, a schedule's text out.
"""

from __future__ import annotations

from killtest.harness.history import History

TIMED = ("t", "f")  # the kinds that fire after a delay, wherever the crawl is: timed.py, first_request.py
EXACT = ("r", "w", "aw", "l:")  # the kinds that fire at one place of the crawl, whatever the time


def landed_schedule(history: History) -> str:
    """The exact schedule where the run's kills landed (`r3+,r7`); "" when the run had no timed kill, or a kill
    no exact point stands for (one worker's, a redeploy, a pause, a power cut, a server's restart)."""
    started = history.first("run_started") or {}
    wall = started.get("wall_clock_at_start")
    requests = history.of_type("request")
    points: list[str] = []
    timed = False
    for kill in history.of_type("kill"):
        point = str(kill.get("point", ""))
        if point.startswith(EXACT) and not point.startswith(TIMED):
            points.append(point)
            continue
        if not point.startswith(TIMED) or kill.get("worker") is not None:
            return ""
        timed = True
        made = [r for r in requests if r.get("start", 0) == kill.get("start", 0) and r["t"] <= kill["t"]]
        if not made:
            points.append("r1")
            continue
        changed = kill.get("store_mtime_ns")
        wrote_after = changed is not None and wall is not None and changed / 1e9 > wall + made[-1]["t"]
        points.append(f"r{len(made) + 1}" if wrote_after else f"r{len(made)}" if made[-1].get("undelivered")
                      else f"r{len(made)}+")
    return ",".join(points) if timed else ""
