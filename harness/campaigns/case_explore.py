"""`killtest cases --explore CASE`: each release of a case explored at every store write, and with power cuts.

A case rests on one kill point picked by hand; this runs `killtest explore` (every store write w<n> of one
recorded crawl, `--power-cut` adding xw<n> after each for a file store; a server's store has its statements)
on the case's own small catalog, in each release's env, with the case's time limit (the framework's timing,
as the case already respects it). Per release it keeps the points run, the broken ones, each distinct
failure with its words and replay line, and the time: a fixed or current release broken at a point its
case did not pick is the result this exists for.

The catalog is the case's own where its options name it, and explore's small default for what a case
leaves to `run`'s defaults (scrapy-7094 names 10 listing pages, not their size: explored on 10 x 3, since
every store write of a 200-product crawl is thousands of points).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable

from killtest.harness.campaigns.case_envs import ensure_env
from killtest.harness.campaigns.case_plan import killtest_commit, killtest_word, last_line
from killtest.harness.design.case_spec import Case, Release
from killtest.harness.design.registry import PROJECT_ROOT
from killtest.harness.design.specfile import load_spec
from killtest.harness.faults.points.store_write import server_store
from killtest.harness.options import options_of


def explore_words(case: Case) -> list[str]:
    """The case's options `explore` takes (its catalog, its time limit, its patience: --no-progress-timeout);
    the rest (--schedule, --runs, ...) are a run's, each with its value."""
    takes = {o.flag: o for o in options_of("explore")}
    words, args, i = [], list(case.args), 0
    while i < len(args):
        option = takes.get(args[i])
        width = 1 if option is not None and option.action == "store_true" else 2
        if option is not None and args[i] != "--only":
            words += args[i:i + width]
        i += width
    return words


def explore_command(case: Case, rel: Release, power_cut: bool, jobs: int, folder: str) -> list[str]:
    """`explore ...` for one release. A server's store (BullMQ's Redis) keeps its data in the server's own
    directory, which a power cut of the run's work dir does not reach: explore refuses --power-cut for it (its
    points are the statements, w<n>:c<k>), so only a file store's release gets it."""
    cut = power_cut and not server_store(load_spec(rel.design))
    return ["explore", "--design", rel.design, *explore_words(case), *(["--power-cut"] if cut else []),
            "-j", str(jobs), "--out", folder]


def explore_case(case: Case, out: str, release: str | None = None, power_cut: bool = True, jobs: int = 2,
                 rebuild: bool = False, say: Callable[[str], None] = print, command: str = "",
                 done: Callable[[dict], object] | None = None) -> dict:
    """Every release of `case` (or `release`) explored; the per-release summary, as results/cases/<case>/explore.json
    holds it. `done` is given the summary after each release, so an interrupted exploration keeps those done."""
    result: dict = {"case": case.name, "command": command, "power_cut": power_cut, "jobs": jobs,
                    "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "killtest_commit": killtest_commit(), "root": PROJECT_ROOT, "releases": []}
    for rel in case.releases:
        if release is not None and release != rel.key and (release != rel.version or rel.label):
            continue  # `--release 3.18.1` is that version's own release; its twins go by key (3.18.1-patched)
        env = ensure_env(case.runtime, rel.packages, rebuild=rebuild, say=say, patch=rel.patch)
        folder = os.path.abspath(os.path.join(out, "cases", case.name, rel.key, "explore"))
        os.makedirs(folder, exist_ok=True)
        words = explore_command(case, rel, power_cut, jobs, folder)
        say(f"[{case.name} {rel.key}] killtest {' '.join(words[:3])} ... (log: {os.path.join(folder, 'explore.log')})")
        with open(os.path.join(folder, "explore.log"), "w", encoding="utf-8") as log:
            subprocess.run([sys.executable, "-m", "killtest", *words], env=env.environ(), stdout=log,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False)
        row = release_row(rel, folder, f"{env.shell_prefix()} {shlex.join([killtest_word(), *words])}",
                          env.shell_prefix())
        result["releases"].append(row)
        say(f"explore {case.name} {rel.key}: {row.get('points', '-')} points, {row.get('broken', '-')} broken,"
            f" {row.get('distinct', '-')} distinct failures, {row['seconds']:.0f}s"
            + (f"; {row['error']}" if "error" in row else ""))
        if done is not None:
            done(result)
    return result


def release_row(rel: Release, folder: str, command: str, prefix: str) -> dict:
    """One release's line of explore.json, read from the exploration's own results in `folder` (its time is
    explore's own elapsed_s)."""
    path = next((os.path.join(folder, n) for n in sorted(os.listdir(folder))
                 if n.startswith("explore-") and n.endswith(".json")), None)
    data = json.load(open(path, encoding="utf-8")) if path else None
    row: dict = {"version": rel.version, "key": rel.key, "role": rel.role, "label": rel.label, "command": command,
                 # the checkout it ran in: the page gives its lines from the root (report/pasted.py)
                 "out": folder, "root": PROJECT_ROOT, "seconds": float(data.get("elapsed_s", 0.0)) if data else 0.0,
                 # when its results were written: the exploration's end, UTC
                 "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.path.getmtime(path))) if path
                 else ""}
    if data is None:
        row["error"] = last_line(os.path.join(folder, "explore.log")) or "explore wrote no results"
        return row
    row.update(points=data.get("points", 0), broken=data.get("broken", 0), distinct=data.get("distinct_failures", 0),
               coverage=data.get("coverage") or {},
               failures=[{"points": f.get("points"), "count": f.get("count"), "findings": f.get("findings"),
                          "where": f.get("where"), "problems": f.get("problems"),
                          "replay": f"{prefix} {f.get('replay')}"} for f in data.get("failures", [])])
    return row

