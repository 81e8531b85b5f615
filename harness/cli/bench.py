"""`killtest bench`: peers under the same kills, catalogs up to 100,000 products, the harness's own cost.

Each part (harness/bench/) writes its figures into results/bench.json as soon as it ends, so
`--only` refreshes one part and keeps the others' figures from the earlier file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from killtest.fixture_site.catalog import build_catalog
from killtest.harness import defaults
from killtest.harness.cli.command import EXIT_PASSED, Command
from killtest.harness.cli.shared import command_line, counts, designs_named
from killtest.harness.design.registry import design_named
from killtest.harness.errors import KilltestError
from killtest.harness.files import write_atomically
from killtest.harness.running.progress import Progress


class BenchCommand(Command):
    name = "bench"
    help = ("measure peers under the same kills, catalogs up to 100,000 products and the harness's own cost:"
            " results/bench.{json,md,png}")

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        # The parts import plotting and peers' code: only `killtest bench` pays for them.
        from killtest.harness.bench.bench_tables import plot_peers, plot_scale
        from killtest.harness.bench.catalog_scale import run_scale
        from killtest.harness.bench.fault_table import EFFECT_DESIGNS, FAULT_DESIGNS, run_faults
        from killtest.harness.bench.overhead_run import measure_overhead
        from killtest.harness.bench.peers import peer_scenarios, run_peers
        from killtest.harness.report.writer import plotting_installed

        parts = [p.strip() for p in args.only.split(",") if p.strip()]
        unknown = [p for p in parts if p not in defaults.BENCH_PARTS]
        if unknown or not parts:
            raise KilltestError(f"--only takes {', '.join(defaults.BENCH_PARTS)}, comma-joined, not {args.only!r}")
        sizes = counts(args.sizes, "--sizes", "product counts", "500,5000")
        # Named only when their part runs: naming a peer builds its framework's env on first use (minutes on a
        # new machine), which `--only scale` never needs.
        peers = designs_named(args.peer_design or list(defaults.BENCH_PEER_DESIGNS)) if "peers" in parts else []
        scaled = design_named(args.scale_design)
        os.makedirs(os.path.join(args.out, "bench"), exist_ok=True)
        path = os.path.join(args.out, "bench.json")
        results = earlier_bench(path)
        results.update({"command": command_line(),
                        "machine": f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}"})
        work = os.path.join(args.out, "bench")
        pace, lease = defaults.PACE_RPS, defaults.LEASE
        if "peers" in parts:
            catalog = build_catalog()
            results["peers_settings"] = {"runs": args.runs, "seed": args.seed, "kills": args.kills,
                                         "products": len(catalog.products), "pace_rps": pace, "lease_s": lease}
            results["peers"] = run_peers(peers, peer_scenarios(args.kills), args.runs, args.seed, catalog, pace,
                                         lease, work, command_line(), progress)
            write_bench(results, args.out, path)
        if "faults" in parts:
            results["faults"] = run_faults(designs_named(list(FAULT_DESIGNS)), designs_named(list(EFFECT_DESIGNS)),
                                           args.seed, build_catalog(), pace, work, command_line(), progress)
            write_bench(results, args.out, path)
        if "scale" in parts:
            results["scale"] = run_scale(scaled, sizes, args.scale_kills, lease, work, args.work_dir,
                                         command_line(), progress)
            write_bench(results, args.out, path)
        if "overhead" in parts:
            results["overhead"] = measure_overhead(work, progress)
            write_bench(results, args.out, path)
        if not args.no_plot and plotting_installed():
            if results.get("peers"):
                plot_peers(results["peers"], os.path.join(args.out, "bench-peers.png"))
            if results.get("scale"):
                plot_scale(results["scale"], os.path.join(args.out, "bench-scale.png"))
        progress.done(f"results: {os.path.join(args.out, 'bench')}.{{json,md}} and bench-*.png")
        return EXIT_PASSED


def earlier_bench(path: str) -> dict:
    """An earlier bench.json, so `--only` refreshes one part and keeps the others' figures."""
    try:
        with open(path, encoding="utf-8") as earlier:
            return json.load(earlier)
    except (OSError, ValueError):
        return {}


def write_bench(results: dict, out: str, path: str) -> None:
    from killtest.harness.bench.bench_tables import bench_markdown

    write_atomically(path, json.dumps(results, indent=2) + "\n")
    write_atomically(os.path.join(out, "bench.md"), bench_markdown(results))
