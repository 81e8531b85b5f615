"""Exact kill schedules a minute, and what strace adds: a benchmark, not a test (`make bench-explore`).

    python -m killtest.harness.bench.explore_rate [--out results/bench-explore] [--points 40]

1. schedules a minute: `explore` on the same spread of each design's crash points (requests, store
   writes, lines), at -j 1 and at -j 2: the idempotent design and the naive control (Python modules,
   pre-forked), and two black-box designs (a Python program and a shell script started as commands,
   whose store writes are reached through strace);
2. what tracing adds to a start: one uninterrupted start of the Python black-box design, plain, under
   the recording strace, and under the write gate aimed at a write it never reaches;
3. what tracing adds to a write: 2,000 pwrite64 calls to one file, plain and under the gate's strace
   (`-e trace=pwrite64 -P FILE --seccomp-bpf`).
Figures only: nothing here fails on a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness import defaults
from killtest.harness.campaigns.exploration import all_crash_points, explore_design
from killtest.harness.design.model import Launch
from killtest.harness.design.registry import design_named
from killtest.harness.faults.points.store_write import GATE
from killtest.harness.faults.store_writes import recording_prefix
from killtest.harness.files import write_atomically
from killtest.harness.running.orchestrator import stage
from killtest.harness.running.runner import RunSettings

DESIGNS = ("idempotent", "naive", "zoo-done-before-record-cmd", "zoo-done-before-record-sh")
BLACK_BOX = "zoo-done-before-record-cmd"
SETTINGS = RunSettings(lease_s=defaults.EXACT_LEASE_S, time_limit_s=defaults.EXACT_TIME_LIMIT_S)
CATALOG = build_catalog(defaults.EXACT_LISTING_PAGES, defaults.EXACT_PER_PAGE)
WRITES = 2000
WRITER = ("import os, sys\nfd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY)\n"
          f"for i in range({WRITES}):\n    os.pwrite(fd, b'x', i)\n")


def spread(points: list, count: int) -> list:
    """`count` points spread evenly over the list (all of them when it is shorter)."""
    if len(points) <= count:
        return points
    return [points[round(i * (len(points) - 1) / (count - 1))] for i in range(count)]


def schedules_a_minute(name: str, count: int) -> dict:
    design = design_named(name)
    with stage(CATALOG, [design]) as on:
        points = spread(all_crash_points(design, on, SETTINGS), count)
    figures: dict[str, Any] = {"design": name, "points": len(points), "kinds": sorted({p.spec[0] for p in points})}
    for jobs in (1, 2):
        exploration = explore_design(design, CATALOG, SETTINGS, points, jobs=jobs)
        figures[f"j{jobs}"] = exploration.schedules_per_minute
        figures[f"j{jobs}_broken"] = len(exploration.broken)
    figures["speedup"] = round(figures["j2"] / figures["j1"], 2) if figures["j1"] else None
    return figures


def start_costs(repeats: int = 5) -> dict:
    """Seconds of one uninterrupted start of the black-box design: plain, recorded, gated."""
    design = design_named(BLACK_BOX)
    timings: dict[str, list[float]] = {"plain": [], "recorded": [], "gated": []}
    with SiteServer(CATALOG) as site:
        for _ in range(repeats):
            for how in timings:
                with tempfile.TemporaryDirectory(prefix="killtest-bench-") as work_dir:
                    launch = Launch(base_url=site.base_url, work_dir=work_dir, lease_s=SETTINGS.lease_s)
                    values = design.values(launch)
                    prefix = {"plain": [], "recorded": list(recording_prefix(os.path.join(work_dir, "log"))),
                              "gated": [sys.executable, "-S", GATE, "pwrite64", "65535", values["store"], "--"]}[how]
                    began = time.monotonic()
                    subprocess.run([*prefix, *design.command(launch)], env=design.environment(launch),
                                   cwd=design.spec_dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   check=True, start_new_session=True)
                    timings[how].append(time.monotonic() - began)
    medians = {how: round(statistics.median(values), 3) for how, values in timings.items()}
    return {"design": BLACK_BOX, "median_s": medians, "repeats": repeats}


def write_costs(repeats: int = 5) -> dict:
    """Microseconds a pwrite64 takes, plain and under the gate's strace (held at no write)."""
    timings: dict[str, list[float]] = {"plain": [], "traced": []}
    for _ in range(repeats):
        for how in timings:
            with tempfile.TemporaryDirectory(prefix="killtest-bench-") as scratch:
                target = os.path.join(scratch, "file")
                prefix = [] if how == "plain" else ["strace", "-f", "-q", "--seccomp-bpf", "-o", os.devnull,
                                                    "-e", "trace=pwrite64", "-P", target]
                began = time.monotonic()
                subprocess.run([*prefix, sys.executable, "-S", "-c", WRITER, target], check=True)
                timings[how].append(time.monotonic() - began)
    plain, traced = (statistics.median(timings[how]) for how in ("plain", "traced"))
    return {"writes": WRITES, "plain_us": round(1e6 * plain / WRITES, 1), "traced_us": round(1e6 * traced / WRITES, 1),
            "added_us_per_write": round(1e6 * (traced - plain) / WRITES, 1)}


def markdown(figures: dict, command: str) -> str:
    lines = ["# Exact kill schedules a minute", "", f"Command: `{command}`", "",
             f"Catalog: {CATALOG.listing_pages} listing pages of {CATALOG.products_per_page} products;"
             f" lease {SETTINGS.lease_s:g} s; the same spread of crash points at -j 1 and -j 2.", "",
             "| design | points (kinds) | -j 1 | -j 2 | speed-up | broken |", "| --- | --- | --- | --- | --- | --- |"]
    for row in figures["rates"]:
        lines.append(f"| {row['design']} | {row['points']} ({', '.join(row['kinds'])}) | {row['j1']} | {row['j2']} |"
                     f" {row['speedup']}x | {row['j1_broken']} / {row['j2_broken']} |")
    start, write = figures["start"], figures["write"]
    lines += ["", f"One start of {start['design']} (median of {start['repeats']}): "
              + ", ".join(f"{how} {s} s" for how, s in start["median_s"].items()) + ".",
              f"A pwrite64: {write['plain_us']} µs plain, {write['traced_us']} µs under the gate's strace"
              f" (+{write['added_us_per_write']} µs a write).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", default=os.path.join(defaults.OUT_DIR, "bench-explore"))
    parser.add_argument("--points", type=int, default=40, help="crash points per design (spread evenly)")
    parser.add_argument("--designs", default=",".join(DESIGNS))
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    figures: dict[str, Any] = {"rates": [], "start": start_costs(), "write": write_costs()}
    for name in args.designs.split(","):
        figures["rates"].append(schedules_a_minute(name, args.points))
        print(json.dumps(figures["rates"][-1]), file=sys.stderr, flush=True)
    command = " ".join(["python -m killtest.harness.bench.explore_rate", *(argv if argv is not None else sys.argv[1:])])
    write_atomically(os.path.join(args.out, "explore-rate.json"), json.dumps(figures, indent=2) + "\n")
    write_atomically(os.path.join(args.out, "explore-rate.md"), markdown(figures, command))
    print(markdown(figures, command))


if __name__ == "__main__":
    main()
