"""The built-in designs under each disk profile: pages a second and durable commits a page.

One uninterrupted crawl of the article's 500-product shop per design and profile, unpaced, every
flush of the design's own processes delayed as the profile says (harness/faults/disk_model.py) and
counted by the same strace (`-c`). A design whose records live in a private server (PostgreSQL, Redis)
pays its server's flushes, which run under the model too but are not in the count: its commits a page
are "-". Also one row with a 1 µs delay: what the strace costs by itself. A measurement, not a test.

    .venv/bin/python -m killtest.harness.bench.disk_profiles --out results
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

from killtest.fixture_site.catalog import build_catalog
from killtest.harness import defaults, lifeline
from killtest.harness.design.registry import design_named
from killtest.harness.faults.disk_model import PROFILES, DiskModel, counted_flushes
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.running.orchestrator import run_phase, stage
from killtest.harness.running.runner import RunSettings

DESIGNS = ("naive", "idempotent", "idempotent-pg", "queue-bullmq")
STRACE_ONLY = DiskModel("strace-1us", 1e-6, 1e-6, "strace on, a 1 µs delay: the tracer's own cost")
NEVER = "t3600"  # a point that never fires: the crawl ends first, uninterrupted


def one_crawl(design_name: str, disk: DiskModel | None, work_dir: str) -> dict:
    """Pages a second and flushes a page of one uninterrupted crawl of `design_name` on `disk`."""
    design = design_named(design_name)
    count_file = os.path.join(work_dir, "flushes.txt")
    model = dataclasses.replace(disk, count_file=count_file) if disk is not None else None
    catalog = build_catalog(defaults.LISTING_PAGES, defaults.PER_PAGE)
    with stage(catalog, [design], disk=disk) as on:
        began = time.monotonic()
        history = run_phase(on, design, parse_schedule(NEVER), RunSettings(time_limit_s=600, disk=model),
                            work_dir=work_dir)
        wall_s = time.monotonic() - began
    requests = len(history.of_type("request"))
    flushes = counted_flushes(count_file) if model is not None else None
    if os.path.exists(count_file):
        os.remove(count_file)
    server = design.store.kind in ("postgres", "redis")
    return {"design": design_name, "disk": disk.name if disk else "none", "requests": requests,
            "wall_s": round(wall_s, 2), "pages_per_s": round(requests / wall_s, 1),
            "flushes": None if server else flushes,
            "flushes_per_page": None if server or not flushes else round(flushes / requests, 2)}


def run_all(designs: tuple[str, ...], work_dir: str | None) -> list[dict]:
    rows = []
    for design in designs:
        for disk in (None, STRACE_ONLY, *PROFILES.values()):
            with lifeline.temp_dir(prefix="killtest-disk-", dir=work_dir) as scratch:
                row = one_crawl(design, disk, scratch)
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    return rows


def markdown(rows: list[dict]) -> str:
    disks = list(dict.fromkeys(row["disk"] for row in rows))
    lines = ["| design | " + " | ".join(disks) + " | flushes a page |", "| --- |" + " --- |" * (len(disks) + 1)]
    for design in dict.fromkeys(row["design"] for row in rows):
        mine = {row["disk"]: row for row in rows if row["design"] == design}
        per_page = next((r["flushes_per_page"] for r in mine.values() if r["flushes_per_page"]), None)
        lines.append(f"| {design} | " + " | ".join(f"{mine[d]['pages_per_s']:g}" if d in mine else "" for d in disks)
                     + f" | {per_page if per_page is not None else '-'} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    disks = list(dict.fromkeys(row["disk"] for row in rows))
    designs = list(dict.fromkeys(row["design"] for row in rows))
    figure, axes = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(designs)
    for n, design in enumerate(designs):
        mine = {row["disk"]: row["pages_per_s"] for row in rows if row["design"] == design}
        axes.bar([i + n * width for i in range(len(disks))], [mine.get(d, 0) for d in disks], width, label=design)
    axes.set_xticks([i + width * (len(designs) - 1) / 2 for i in range(len(disks))], disks)
    axes.set_ylabel("pages a second (500 products, unpaced)")
    axes.set_title("The built-in designs under each disk profile")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="disk_profiles", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results")
    parser.add_argument("--design", action="append", help=f"designs (default {','.join(DESIGNS)})")
    parser.add_argument("--work-dir")
    args = parser.parse_args(argv)
    lifeline.ensure_watchdog()
    rows = run_all(tuple(args.design or DESIGNS), args.work_dir)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench-disk.json"), "w", encoding="utf-8") as out:
        json.dump(rows, out, indent=2)
    with open(os.path.join(args.out, "bench-disk.md"), "w", encoding="utf-8") as out:
        out.write("# Pages a second under each disk profile\n\n" + markdown(rows))
    plot(rows, os.path.join(args.out, "bench-disk.png"))
    print(markdown(rows))


if __name__ == "__main__":
    main()
