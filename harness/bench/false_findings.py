"""Two measurements of the harness itself: false findings on correct designs, and a soak for leaks.

**False findings.** Every correct built-in design (idempotent, idempotent-pg, queue-bullmq,
idempotent-effects) is run many times with timed kills; a finding on any of them is the harness's
mistake (a request credited to the wrong start, a race in the checker), since these designs keep
every promise. Runs that proved nothing (no kill landed) are counted apart: they are not findings.

    python -m killtest.harness.bench.false_findings findings --runs 100 --out results/bench

**Soak.** One long campaign of short runs (a small catalog), sampling the harness's own open files,
threads, child processes and killtest temporary directories before, during and after: a harness
that leaks one file per run shows it after two hundred.

    python -m killtest.harness.bench.false_findings soak --runs 200 --out results/bench

Both print their figures and write them as JSON in --out. A benchmark reports figures; it fails
(exit 1) only on a broken promise: a false finding, or growth in what the soak samples.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
import tempfile
import time

import psutil

from killtest.fixture_site.catalog import build_catalog
from killtest.harness import defaults, lifeline
from killtest.harness.design.registry import design_named
from killtest.harness.faults.points.timed import AfterDelay
from killtest.harness.faults.schedule import KillSchedule, run_seeds, timed_schedule
from killtest.harness.files import write_atomically
from killtest.harness.report.campaign import Campaign
from killtest.harness.running.campaign_plan import CampaignPlan
from killtest.harness.running.orchestrator import run_campaign
from killtest.harness.running.progress import Progress
from killtest.harness.running.runner import RunSettings

PROG = "python -m killtest.harness.bench.false_findings"
CORRECT_DESIGNS = ("idempotent", "idempotent-pg", "queue-bullmq", "idempotent-effects")


def _one_worker_each(schedule: KillSchedule, workers: int) -> KillSchedule:
    """The same delays, each killing one worker alone, drawn by the schedule's seed: the other workers go on."""
    rng = random.Random(f"killtest-bench-worker:{schedule.seed}")
    return dataclasses.replace(schedule, points=tuple(AfterDelay(p.delay_s, worker=rng.randint(1, workers))
                                                      for p in schedule.points if isinstance(p, AfterDelay)))


def _plan(design_names, runs: int, kills: int, listing_pages: int, per_page: int, delay: tuple[float, float],
          out: str, name: str, workers: int = 1, pace_rps: float = 0.0, one_worker: bool = False) -> CampaignPlan:
    schedules = [timed_schedule(seed, kills, *delay) for seed in run_seeds(1, runs)]
    if one_worker:
        schedules = [_one_worker_each(schedule, workers) for schedule in schedules]
    return CampaignPlan(command=" ".join(sys.argv), designs=tuple(design_named(n) for n in design_names),
                        schedules=tuple(schedules),
                        catalog=build_catalog(listing_pages, per_page), settings=RunSettings(workers=workers),
                        out_dir=out, name=name, plot=False, prefork=True, seed=1, kill_delay_s=delay,
                        pace_rps=pace_rps)


def false_findings(args: argparse.Namespace, progress: Progress) -> dict:
    """Each correct design, `runs` runs with timed kills: how many findings (all false), how many proved nothing."""
    figures: dict = {"runs_per_design": args.runs, "kills_per_run": args.kills, "kill_delay_s": args.kill_delay,
                     "products": args.listing_pages * args.per_page, "workers": args.workers,
                     "one_worker_kills": args.one_worker,
                     "pace_rps": args.pace, "designs": {}}
    for name in args.designs:
        began = time.monotonic()
        campaign = run_campaign(_plan([name], args.runs, args.kills, args.listing_pages, args.per_page,
                                      tuple(args.kill_delay), args.out, f"false-findings-{name}", args.workers,
                                      args.pace, args.one_worker), progress)
        invalid = [v for v in campaign.verdicts if v.validity == "invalid"]
        figures["designs"][name] = {
            "runs": len(campaign.verdicts), "false_findings": sum(len(v.findings) for v in invalid),
            "runs_with_a_finding": len(invalid),
            "findings": sorted({code for v in invalid for code in v.findings}),
            "problems": [f"run {v.run}: {p}" for v in invalid for p in v.problems][:20],
            "proved_nothing": sum(v.proved_nothing for v in campaign.verdicts),
            "kills_landed": sum(v.kills for v in campaign.verdicts),
            "wall_s": round(time.monotonic() - began, 1)}
        progress.done(f"{name}: {figures['designs'][name]}")
    figures["false_findings"] = sum(d["false_findings"] for d in figures["designs"].values())
    return figures


def _sample(me: psutil.Process) -> dict:
    temp = tempfile.gettempdir()
    children = me.children(recursive=True)
    mine = [n for n in os.listdir(temp) if n.startswith("killtest-")
            and (lifeline.owner_of(os.path.join(temp, n)) or (0,))[0] == me.pid]
    return {"open_files": me.num_fds(), "threads": me.num_threads(),
            "child_processes": len(children),
            "child_process_names": sorted({c.name() for c in children if c.is_running()}),
            "killtest_temp_dirs": len(mine)}


def soak(args: argparse.Namespace, progress: Progress) -> dict:
    """`runs` short runs of one design, in one campaign; the harness's own resources sampled as it goes."""
    me = psutil.Process()
    samples: list[dict] = []
    finished = [0]

    class Sampling(Progress):
        def done(self, message: str) -> None:
            super().done(message)
            if not message.startswith("["):
                return  # a health warning, not a finished run's line
            finished[0] += 1
            if finished[0] == 1 or finished[0] % args.sample_every == 0:
                samples.append({"after_runs": finished[0], **_sample(me)})

    before = _sample(me)
    began = time.monotonic()
    plan = _plan([args.design], args.runs, args.kills, args.listing_pages, args.per_page, tuple(args.kill_delay),
                 args.out, "soak-campaign", args.workers, args.pace)
    campaign: Campaign = run_campaign(plan, Sampling())
    after = _sample(me)
    kept = samples
    growth = {key: after[key] - kept[0][key] for key in ("open_files", "threads", "child_processes",
                                                          "killtest_temp_dirs")} if kept else {}
    return {"design": args.design, "runs": len(campaign.verdicts), "workers": args.workers,
            "products": args.listing_pages * args.per_page, "wall_s": round(time.monotonic() - began, 1),
            "valid_runs": sum(v.valid for v in campaign.verdicts), "before_campaign": before,
            "after_first_run": kept[0] if kept else None, "samples": kept, "after_campaign": after,
            "growth_from_first_run_to_end": growth}


def as_markdown(part: str, figures: dict, command: str) -> str:
    """The figures for people: one row a design (findings) or a sample (soak), and the command that gave them."""
    if part == "findings":
        lines = [f"# False findings: {figures['runs_per_design']} runs a design, {figures['kills_per_run']} timed"
                 f" kills a run ({figures['kill_delay_s'][0]}–{figures['kill_delay_s'][1]} s apart),"
                 f" {figures['products']} products, {figures.get('workers', 1)} worker(s)"
                 f"{' (each kill hits one)' if figures.get('one_worker_kills') else ''},"
                 f" paced at {figures.get('pace_rps', 0)} requests/s", "",
                 "| design | runs | runs with a finding | findings | proved nothing | kills landed | wall |",
                 "| --- | --- | --- | --- | --- | --- | --- |"]
        for name, d in figures["designs"].items():
            lines.append(f"| {name} | {d['runs']} | {d['runs_with_a_finding']} | {d['false_findings']}"
                         f"{' (' + ', '.join(d['findings']) + ')' if d['findings'] else ''} | {d['proved_nothing']}"
                         f" | {d['kills_landed']} | {d['wall_s']} s |")
        lines += ["", f"Total false findings: **{figures['false_findings']}**."]
    else:
        keys = ("open_files", "threads", "child_processes", "killtest_temp_dirs")
        lines = [f"# Soak: {figures['runs']} runs of {figures['design']}, {figures['workers']} worker(s),"
                 f" {figures['products']} products, {figures['wall_s']} s", "",
                 "| after runs | " + " | ".join(keys) + " |", "| --- |" + " --- |" * len(keys)]
        rows = [("before", figures["before_campaign"]), *((str(s["after_runs"]), s) for s in figures["samples"]),
                ("after", figures["after_campaign"])]
        lines += [f"| {label} | " + " | ".join(str(sample[k]) for k in keys) + " |" for label, sample in rows]
        lines += ["", f"Valid runs: {figures['valid_runs']} of {figures['runs']}. Growth from the first run to the"
                      f" end: {figures['growth_from_first_run_to_end']}."]
    return "\n".join([*lines, "", f"Command: `{command}`", ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG,
                                     description=__doc__.split("\n")[0])
    parts = parser.add_subparsers(dest="part", required=True)
    for part, runs in (("findings", 100), ("soak", 200)):
        sub = parts.add_parser(part)
        sub.add_argument("--runs", type=int, default=runs)
        sub.add_argument("--kills", type=int, default=5 if part == "findings" else 2)
        # The soak's runs are short and unpaced (0.1 s a crawl of 30 products here): kills come soon enough to land.
        sub.add_argument("--kill-delay", type=float, nargs=2,
                         default=[0.2, 1.0] if part == "findings" else [0.02, 0.08])
        sub.add_argument("--listing-pages", type=int, default=10 if part == "findings" else 3)
        sub.add_argument("--per-page", type=int, default=20 if part == "findings" else 10)
        sub.add_argument("--out", default="results/bench")
        sub.add_argument("--workers", type=int, default=1)
        # The findings runs are paced at the article's rate, so a crawl lasts longer than the kill delays
        # and the kills land: unpaced, 200 products take 0.5 s here and half the runs proved nothing.
        sub.add_argument("--pace", type=float, default=defaults.ARTICLE_PACE_RPS if part == "findings" else 0.0,
                         help="requests a second the site serves at most (0: as fast as it can)")
    parts.choices["findings"].add_argument("--designs", nargs="+", default=list(CORRECT_DESIGNS))
    parts.choices["findings"].add_argument("--one-worker", action="store_true",
                                           help="each kill hits one worker (drawn by the seed) and the others go on")
    parts.choices["soak"].add_argument("--design", default="idempotent")
    parts.choices["soak"].add_argument("--sample-every", type=int, default=25)
    args = parser.parse_args(argv)
    os.makedirs(os.path.join(args.out, "history"), exist_ok=True)
    progress = Progress()
    figures = false_findings(args, progress) if args.part == "findings" else soak(args, progress)
    part = "false-findings" if args.part == "findings" else "soak"
    name = f"{part}-figures.json" if args.workers == 1 else \
        f"{part}-{args.workers}-workers{'-one-killed' if getattr(args, 'one_worker', False) else ''}-figures.json"
    path = os.path.join(args.out, name)
    write_atomically(path, json.dumps(figures, indent=2) + "\n")
    command = " ".join([PROG, *(sys.argv[1:] if argv is None else argv)])
    write_atomically(path[:-len(".json")] + ".md", as_markdown(args.part, figures, command))
    print(json.dumps(figures, indent=2))
    if args.part == "findings":
        return 1 if figures["false_findings"] else 0
    return 1 if any(v > 0 for v in figures["growth_from_first_run_to_end"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
