"""The `killtest` command line: run, replay, explore and zoo kill-test designs; calibrate sweeps the site's pace."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shlex
import signal
import sys

from fixture_site.catalog import DEFAULT_LISTING_PAGES, DEFAULT_PRODUCTS_PER_PAGE, Drift, build_catalog, parse_drift
from fixture_site.server import SiteServer
from fixture_site.toxics import Toxics, ToxicSpecError, parse_toxics
from harness.report.campaign import Campaign, summarise
from harness.bench.peers import PEER_DESIGNS
from harness.bench.catalog_scale import DEFAULT_SIZES
from harness.check.baseline import (DEFAULT_MAX_EXTRA_REPEATS, DEFAULT_MAX_SLOWDOWN_PCT, Thresholds, diff_table,
                              load_baseline)
from harness.running.orchestrator import CampaignPlan, run_campaign
from harness.design.registry import design_named
from harness.errors import KilltestError
from harness.check.health import DEFAULT_HEALTH_THRESHOLD
from harness.running.exploration import explore
from harness.files import write_atomically
from harness.running.prefork import Zygote
from harness.running.progress import Progress
from harness.published import (ARTICLE_PACE_RPS, KILL_DELAY_S, KILLS_PER_RUN, LEASE_S, PUBLISHED_NAIVE_ROWS_PER_PRODUCT,
                               RUNS_PER_DESIGN)
from harness.report.render import exploration_markdown
from harness.report.scaling_table import plot_scaling, scaling_markdown, scaling_rows
from harness.running.runner import DEFAULT_TIME_LIMIT_S, RunSettings
from harness.faults.schedule import ServerRestart, parse_schedule, run_seeds, timed_schedule
from harness.servers.for_stores import StoreServers
from harness.faults.zoo_scenarios import selected, zoo_entries
from harness.report.zoo_table import zoo_markdown
from harness.running.zoo_runs import run_zoo

# Exact-point runs use a small catalog whose pages take milliseconds: a 0.2 s lease is still 50 times the
# slowest page, and it keeps the wait for a killed start's lease from dominating the run.
EXACT_LEASE_S = 0.2
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr, not a usage block."""

    def error(self, message: str):
        raise KilltestError(f"{message} (see '{self.prog} --help')")


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be more than zero, not {text}")
        return value
    return parse


def _not_negative(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"must be zero or more, not {text}")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="killtest", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)

    run = commands.add_parser("run", help="kill-test one or more designs on the same seeded schedules")
    run.add_argument("--design", action="append", required=True,
                     help="a design to test: a built-in name (naive, idempotent, zoo-...) or the path of a design"
                          " spec (.toml); repeat it or join them with commas")
    _campaign_options(run)
    _scenario_options(run)
    _baseline_options(run)
    run.add_argument("--lease", type=_positive(float), default=LEASE_S,
                     help=f"lease length in seconds for designs that take one (default {LEASE_S:g})")
    run.add_argument("--check-faster", action="store_true",
                     help="also fail unless each idempotent design's total wall time over the shared schedules beats the"
                          " naive control's (a timing check: make killtest sets it)")
    run.add_argument("--name", default="killtest", help="base name of the result files (default killtest)")
    run.add_argument("--schedule", default=None,
                     help="exact kill points instead of timed kills, comma-joined: t<seconds>, r<request>,"
                          " l:<file>:<line>:<hit> (for example r5,l:scrapers/idempotent.py:117:2); see harness/faults/schedule.py")

    replay = commands.add_parser("replay", help="run one design once on one schedule, as a failure printed it")
    replay.add_argument("--design", action="append", required=True, help="the design to run")
    replay.add_argument("--schedule", required=True, help="the kill points, as printed by the failure")
    _exact_point_options(replay)
    _scenario_options(replay)

    explore = commands.add_parser("explore", help="kill once at every request boundary and commit-path line")
    explore.add_argument("--design", required=True, help="the design to explore: a built-in name or a spec path")
    explore.add_argument("--only", default=None, help="explore just these kill points (comma-joined, as --schedule)")
    _exact_point_options(explore)

    zoo = commands.add_parser("zoo", help="run the bug zoo: every known mistake must be flagged, the control not")
    zoo.add_argument("--only", default=None, help="run just these zoo designs (comma-joined names)")
    zoo.add_argument("--out", default="results", help="directory for results (default results/)")
    zoo.add_argument("--work-dir", default=None, help="existing directory for the scrapers' stores")

    scale = commands.add_parser("scale", help="the same kill test at several worker counts: a benchmark")
    scale.add_argument("--design", action="append", required=True, help="designs to scale (names or spec paths)")
    scale.add_argument("--workers-list", default="1,2,4,8", help="worker counts, comma-joined (default 1,2,4,8)")
    scale.add_argument("--lease", type=_positive(float), default=LEASE_S,
                       help=f"lease length in seconds for designs that take one (default {LEASE_S:g})")
    _campaign_options(scale, runs_default=1)

    bench = commands.add_parser("bench", help="measure peers under the same kills, catalogs up to 100,000 products"
                                              " and the harness's own cost: results/bench.{json,md,png}")
    bench.add_argument("--only", default="peers,faults,scale,overhead",
                       help="which parts to run, comma-joined (default peers,faults,scale,overhead); the others"
                            " keep their figures from an earlier bench.json")
    bench.add_argument("--peer-design", action="append", default=None,
                       help=f"designs for the peer table (default {','.join(PEER_DESIGNS)})")
    bench.add_argument("--runs", type=_positive(int), default=3, help="runs per peer scenario (default 3)")
    bench.add_argument("--kills", type=_not_negative(int), default=KILLS_PER_RUN,
                       help=f"kills per peer run (default {KILLS_PER_RUN})")
    bench.add_argument("--seed", type=int, default=1, help="seed of the peers' run 1 (default 1)")
    bench.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                       help=f"catalog sizes for the scaling run, in products (default {','.join(map(str, DEFAULT_SIZES))})")
    bench.add_argument("--scale-design", default="idempotent", help="the design to scale (default idempotent)")
    bench.add_argument("--scale-kills", type=_not_negative(int), default=3,
                       help="SIGKILLs per scaling run, at even shares of the crawl (default 3)")
    bench.add_argument("--out", default="results", help="directory for results (default results/)")
    bench.add_argument("--work-dir", default=None, help="existing directory for the scrapers' stores")
    bench.add_argument("--no-plot", action="store_true", help="skip the PNG plots")

    calibrate = commands.add_parser("calibrate", help="run the naive control at several site paces")
    calibrate.add_argument("--paces", default=f"0,100,{ARTICLE_PACE_RPS:g},200",
                           help="comma-separated site paces in requests per second, 0 for unpaced"
                                f" (default 0,100,{ARTICLE_PACE_RPS:g},200)")
    _campaign_options(calibrate, runs_default=2)
    return parser


def _campaign_options(command: argparse.ArgumentParser, runs_default: int = RUNS_PER_DESIGN) -> None:
    command.add_argument("--runs", type=_positive(int), default=runs_default,
                         help=f"runs per design (default {runs_default})")
    command.add_argument("--kills", type=_not_negative(int), default=KILLS_PER_RUN,
                         help=f"SIGKILLs per run before the last start runs to the end (default {KILLS_PER_RUN})")
    command.add_argument("--seed", type=int, default=1, help="seed of run 1; run r uses seed + r - 1 (default 1)")
    command.add_argument("--kill-delay", default=f"{KILL_DELAY_S[0]},{KILL_DELAY_S[1]}",
                         help="the range a kill lands in after each start, LOW,HIGH seconds (default 0.2,1.0)")
    command.add_argument("--latency", type=_not_negative(float), default=0.0,
                         help="added per-request latency of the fixture site, seconds (default 0)")
    command.add_argument("--pace", type=_not_negative(float), default=ARTICLE_PACE_RPS,
                         help="the most requests a second the site serves, 0 for as many as the machine can"
                              f" (default {ARTICLE_PACE_RPS:g}, the article's site: see harness/published.py)")
    _site_options(command, DEFAULT_LISTING_PAGES, DEFAULT_PRODUCTS_PER_PAGE, DEFAULT_TIME_LIMIT_S)
    command.add_argument("--out", default="results", help="directory for results (default results/)")
    command.add_argument("--work-dir", default=None,
                         help="existing directory for the scrapers' stores while they run (default: system temp)")
    command.add_argument("--no-plot", action="store_true", help="skip the PNG plots")
    command.add_argument("--health-threshold", type=_positive(float), default=DEFAULT_HEALTH_THRESHOLD,
                         help="warn when a run makes more requests per stored record and crawl than this, the"
                              f" article's health metric (default {DEFAULT_HEALTH_THRESHOLD:g}; a warning, not a failure)")
    command.add_argument("--all-timelines", action="store_true",
                         help="draw a timeline for every run (default: each design's first run and every failed run)")


def _site_options(command: argparse.ArgumentParser, pages: int, per_page: int, time_limit_s: float) -> None:
    command.add_argument("--listing-pages", type=_positive(int), default=pages,
                         help=f"listing pages in the catalog (default {pages})")
    command.add_argument("--per-page", type=_positive(int), default=per_page,
                         help=f"products per listing page (default {per_page})")
    command.add_argument("--time-limit", type=_positive(float), default=time_limit_s,
                         help=f"seconds a run may take before it is a liveness failure (default {time_limit_s:g})")


def _scenario_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--workers", type=_positive(int), default=1,
                         help="worker processes per start, sharing one store; a kill hits them all (default 1)")
    command.add_argument("--recrawls", type=_not_negative(int), default=0,
                         help="after the killed crawl, crawl the same store again this many times, unkilled; a design"
                              " must take {crawl} (default 0)")
    command.add_argument("--slow-page", action="append", default=[], metavar="PATH=SECONDS",
                         help="make one page of the site this slow, for example /product/1=0.6 (repeatable)")
    command.add_argument("--toxics", default=None, metavar="SPEC",
                         help="network faults the site injects, for example error=0.05,throttle=0.03,reset=0.02,"
                              "truncate=0.02,timeout=0.01,latency=0.002,jitter=0.001,only=/product/"
                              " (see fixture_site/toxics.py)")
    command.add_argument("--drift", default=None, metavar="SPEC",
                         help="the site's content changes before every re-crawl: changed=0.1,removed=0.02,added=0.02"
                              " (shares of the catalog; with --recrawls or --drift-during); see fixture_site/catalog.py")
    command.add_argument("--drift-during", type=_positive(float), default=None, metavar="SECONDS",
                         help="with --drift: the site also changes once this long into the killed crawl")
    command.add_argument("--drift-seed", type=int, default=1, help="seed of the drift (default 1)")
    command.add_argument("--toxic-seed", type=int, default=1,
                         help="seed of run 1's faults; run r uses seed + r - 1, the same for every design (default 1)")


def _drift(args) -> Drift | None:
    text = getattr(args, "drift", None)
    if text is None:
        if getattr(args, "drift_during", None) is not None:
            raise KilltestError("--drift-during needs --drift SPEC, for example --drift changed=0.1")
        return None
    try:
        drift = parse_drift(text, args.drift_seed)
    except ValueError as error:
        raise KilltestError(f"--drift: {error}") from None
    if not getattr(args, "recrawls", 0) and getattr(args, "drift_during", None) is None:
        raise KilltestError("--drift changes the site before each re-crawl (--recrawls N) or once during the killed"
                            " crawl (--drift-during SECONDS): give one of them")
    return drift


def _toxics(args) -> Toxics | None:
    text = getattr(args, "toxics", None)
    if text is None:
        return None
    try:
        return parse_toxics(text)
    except ToxicSpecError as error:
        raise KilltestError(f"--toxics: {error}") from None


def _slow_pages(texts: list[str]) -> tuple[tuple[str, float], ...]:
    pages = []
    for text in texts:
        path, _, seconds = text.partition("=")
        try:
            delay = float(seconds)
        except ValueError:
            delay = -1.0
        if not path.startswith("/") or delay < 0:
            raise KilltestError(f"--slow-page takes PATH=SECONDS, for example /product/1=0.6, not {text!r}")
        pages.append((path, delay))
    return tuple(pages)


def _baseline_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--baseline", default=None, metavar="JSON",
                         help="a saved killtest.json: fail when a design regresses against it (see harness/check/baseline.py)")
    command.add_argument("--max-slowdown", type=_not_negative(float), default=DEFAULT_MAX_SLOWDOWN_PCT, metavar="PCT",
                         help="with --baseline: how much slower, in percent of mean wall time per run, still passes"
                              f" (default {DEFAULT_MAX_SLOWDOWN_PCT:g})")
    command.add_argument("--max-extra-repeats", type=_not_negative(float), default=DEFAULT_MAX_EXTRA_REPEATS,
                         help="with --baseline: how many more repeated requests per landed kill still pass, for a"
                              f" design that claims idempotence (default {DEFAULT_MAX_EXTRA_REPEATS:g})")


def _exact_point_options(command: argparse.ArgumentParser) -> None:
    """Options of the commands that run exact points: a small catalog and a short lease keep them fast."""
    _site_options(command, pages=2, per_page=3, time_limit_s=60.0)
    command.add_argument("--lease", type=_positive(float), default=EXACT_LEASE_S,
                         help=f"lease length in seconds (default {EXACT_LEASE_S:g})")
    command.add_argument("--no-prefork", action="store_true",
                         help="start a new interpreter for every start instead of forking one that imported"
                              " the design already (slower, and lease expiry may then race the start-up)")
    command.add_argument("--out", default="results", help="directory for results (default results/)")
    command.add_argument("--work-dir", default=None, help="existing directory for the scrapers' stores")


def _kill_delay(text: str) -> tuple[float, float]:
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        raise KilltestError(f"--kill-delay takes LOW,HIGH in seconds, for example 0.2,1.0, not {text!r}") from None
    return low, high


def _designs(names: list[str]):
    wanted = [n.strip() for joined in names for n in joined.split(",") if n.strip()]
    if not wanted:
        raise KilltestError("--design needs at least one design name")
    return [design_named(n) for n in dict.fromkeys(wanted)]


def _prepare_dirs(args) -> None:
    if args.work_dir is not None and not os.path.isdir(args.work_dir):
        raise KilltestError(f"--work-dir {args.work_dir!r} does not exist; create it or leave the option out")
    try:
        os.makedirs(os.path.join(args.out, "history"), exist_ok=True)
    except OSError as error:
        raise KilltestError(f"cannot create the results directory {args.out!r}: {error.strerror}") from None


def _check_points(args, schedules, designs) -> None:
    """Kill points that name a worker need that many workers; a server restart needs a store server."""
    workers = getattr(args, "workers", 1)
    for schedule in schedules:
        for point in schedule.points:
            if isinstance(point, ServerRestart):
                for design in designs:
                    if design.store.kind not in ("postgres", "redis"):
                        raise KilltestError(f"kill point {point.spec} restarts the store's server, but design"
                                            f" {design.name!r} keeps a {design.store.kind} store with no server")
            if getattr(point, "worker", None) is not None and point.worker > workers:
                raise KilltestError(f"kill point {point.spec} names worker {point.worker}, but each start has"
                                    f" {workers}; give --workers {point.worker} or more")


def _check_recrawls(args, designs) -> None:
    for design in designs:
        if getattr(args, "recrawls", 0) and not design.can_recrawl:
            raise KilltestError(f"--recrawls: design {design.name!r} does not take {{crawl}} in its command, so it"
                                " cannot be told that a crawl is a re-crawl")


def _timed_plan(args, designs, pace_rps: float, name: str) -> CampaignPlan:
    """The plan of `run` and `calibrate`: seeded timed schedules, or one exact schedule repeated."""
    _check_recrawls(args, designs)
    delay_range = _kill_delay(args.kill_delay)
    exact = getattr(args, "schedule", None)
    if exact is not None:
        schedules = (parse_schedule(exact),) * args.runs  # exact points: every run repeats the same one
    else:
        schedules = tuple(timed_schedule(seed, args.kills, *delay_range) for seed in run_seeds(args.seed, args.runs))
    _check_points(args, schedules, designs)
    return CampaignPlan(command=_command_line(), designs=tuple(designs), schedules=schedules,
                        catalog=build_catalog(args.listing_pages, args.per_page),
                        settings=_settings(args, getattr(args, "lease", LEASE_S)),
                        out_dir=args.out, name=name, latency_s=args.latency, pace_rps=pace_rps,
                        work_dir=args.work_dir,
                        slow_pages=_slow_pages(getattr(args, "slow_page", [])),
                        toxics=_toxics(args), toxic_seed=getattr(args, "toxic_seed", 1),
                        plot=not args.no_plot, all_timelines=args.all_timelines,
                        health_threshold=args.health_threshold, check_faster=getattr(args, "check_faster", False),
                        seed=None if exact is not None else args.seed, kill_delay_s=delay_range,
                        baseline_runs=tuple(load_baseline(args.baseline)) if getattr(args, "baseline", None) else (),
                        thresholds=Thresholds(getattr(args, "max_slowdown", DEFAULT_MAX_SLOWDOWN_PCT),
                                              getattr(args, "max_extra_repeats", DEFAULT_MAX_EXTRA_REPEATS)))


def _settings(args, lease_s: float) -> RunSettings:
    return RunSettings(lease_s=lease_s, time_limit_s=args.time_limit, recrawls=getattr(args, "recrawls", 0),
                       workers=getattr(args, "workers", 1), drift=_drift(args),
                       drift_during_s=getattr(args, "drift_during", None))


def _command_line() -> str:
    return shlex.join(["killtest", *sys.argv[1:]])


def _command_run(args, progress: Progress) -> int:
    designs = _designs(args.design)
    _prepare_dirs(args)
    campaign = run_campaign(_timed_plan(args, designs, args.pace, args.name), progress)
    for figure in campaign.comparison_figures:
        progress.done(figure)
    for problem in campaign.comparison_problems:
        progress.done(f"FAIL: {problem}")
    if campaign.baseline_diffs:
        _print_baseline(campaign, args.baseline, progress)
    _print_band(campaign, progress)
    progress.done(f"results: {os.path.join(args.out, args.name)}.{{json,md,png}}"
                  f" — {'PASS' if campaign.valid else 'FAIL'}")
    return 0 if campaign.valid else EXIT_CHECK_FAILED


def _print_baseline(campaign: Campaign, path: str, progress: Progress) -> None:
    """The side-by-side diff against the baseline, as an aligned table on stderr."""
    rows = [["design", "figure", "baseline", "this run", "verdict"]] + diff_table(campaign.baseline_diffs)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    progress.done(f"against the baseline {path}:")
    for row in rows:
        progress.done("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    for regression in campaign.regressions:
        progress.done(f"REGRESSION: {regression}")


def _print_band(campaign: Campaign, progress: Progress) -> None:
    summary = summarise(campaign)
    if "naive" in summary:
        gap = summary["naive"]["band_gap"]
        progress.done(f"naive rows per product {gap['ours'][0]:.2f}–{gap['ours'][1]:.2f} against the published"
                      f" {gap['published'][0]}–{gap['published'][1]}: lowest run {gap['lowest_below_band_by']:.2f}"
                      f" below, highest {gap['highest_above_band_by']:.2f} above"
                      f" (start-up {summary['naive']['median_startup_s']}s,"
                      f" {summary['naive']['median_request_rate']} requests/s)")


def _command_calibrate(args, progress: Progress) -> int:
    try:
        paces = [float(x) for x in args.paces.split(",") if x.strip()]
    except ValueError:
        raise KilltestError(f"--paces takes comma-separated requests per second, not {args.paces!r}") from None
    if not paces or any(x < 0 for x in paces):
        raise KilltestError("--paces needs one or more paces of zero (unpaced) or more requests per second")
    _prepare_dirs(args)
    naive = design_named("naive")
    rows = []
    for pace in paces:
        campaign = run_campaign(_timed_plan(args, [naive], pace, f"calibration-pace-{pace:g}"), progress)
        summary = summarise(campaign)["naive"]
        rows.append((pace, summary))
        gap = summary["band_gap"]
        progress.done(f"pace {_pace(pace)}: naive rows per product {gap['ours'][0]:.2f}–{gap['ours'][1]:.2f}"
                      f" (published {gap['published'][0]}–{gap['published'][1]})")
    write_atomically(os.path.join(args.out, "calibration.md"), calibration_markdown(rows, args))
    nearest = min(rows, key=lambda row: _distance_to_band(row[1]["band_gap"]))
    progress.done(f"nearest the published band: pace {_pace(nearest[0])};"
                  f" table in {os.path.join(args.out, 'calibration.md')}")
    return 0


def _pace(pace: float) -> str:
    return f"{pace:g} requests/s" if pace else "unpaced"


def _distance_to_band(gap: dict) -> float:
    return gap["lowest_below_band_by"] + gap["highest_above_band_by"]


def calibration_markdown(rows, args) -> str:
    lines = ["# Site pace against the naive control's rows per product", "",
             f"{args.runs} runs per pace, {args.kills} kills each, seeds from {args.seed}, added latency"
             f" {args.latency:g} s. Published band:"
             f" {PUBLISHED_NAIVE_ROWS_PER_PRODUCT[0]}–{PUBLISHED_NAIVE_ROWS_PER_PRODUCT[1]} rows per product.", "",
             "| pace | rows per product | distance to band | wall s | start-up s | requests/s | kills before work |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for pace, s in rows:
        gap = s["band_gap"]
        lines.append(f"| {_pace(pace)} | {gap['ours'][0]:.2f}–{gap['ours'][1]:.2f} | {_distance_to_band(gap):.2f}"
                     f" | {s['wall_s'][0]:.2f}–{s['wall_s'][1]:.2f} | {s['median_startup_s']}"
                     f" | {s['median_request_rate']} | {s['kills_before_work']} of {s['kills']} |")
    return "\n".join(lines) + "\n"


def _command_replay(args, progress: Progress) -> int:
    designs = _designs(args.design)
    schedule = parse_schedule(args.schedule)  # a bad spec is refused before anything starts
    _check_recrawls(args, designs)
    _check_points(args, [schedule], designs)
    _prepare_dirs(args)
    plan = CampaignPlan(command=_command_line(), designs=tuple(designs), schedules=(schedule,),
                        catalog=build_catalog(args.listing_pages, args.per_page),
                        settings=_settings(args, args.lease), slow_pages=_slow_pages(args.slow_page),
                        toxics=_toxics(args), toxic_seed=args.toxic_seed,
                        out_dir=args.out, name="replay", work_dir=args.work_dir, plot=False,
                        prefork=not args.no_prefork)
    campaign = run_campaign(plan, progress)
    progress.done(f"results: {os.path.join(args.out, 'replay')}.{{json,md}} — {'PASS' if campaign.valid else 'FAIL'}")
    return 0 if campaign.valid else EXIT_CHECK_FAILED


def _command_explore(args, progress: Progress) -> int:
    design = design_named(args.design)
    points = list(parse_schedule(args.only).points) if args.only else None
    _prepare_dirs(args)
    catalog = build_catalog(args.listing_pages, args.per_page)
    settings = RunSettings(lease_s=args.lease, time_limit_s=args.time_limit)
    with SiteServer(catalog) as site, StoreServers([design]) as servers, contextlib.ExitStack() as stack:
        launcher = None if args.no_prefork or design.module is None else stack.enter_context(Zygote(design))
        exploration = explore(design, site, settings, args.work_dir, points, on_progress=progress.step,
                              launcher=launcher, fresh_dsn=lambda: servers.dsn_for(design))
    base = os.path.join(args.out, f"explore-{design.name}")
    write_atomically(f"{base}.json", json.dumps(exploration.to_json(), indent=2) + "\n")
    write_atomically(f"{base}.md", exploration_markdown(exploration, _command_line()))
    for outcome in exploration.broken:
        progress.done(f"{outcome.point}: {'; '.join(outcome.problems)}")
    progress.done(f"explore {design.name}: {len(exploration.outcomes)} crash points, {len(exploration.broken)} broken,"
                  f" {exploration.schedules_per_minute} schedules/minute; {base}.{{json,md}}")
    if exploration.broken:
        first = exploration.broken[0]
        progress.done(f"replay the first: killtest replay --design {design.name} --schedule {first.point}"
                      f" --listing-pages {args.listing_pages} --per-page {args.per_page} --lease {args.lease:g}")
    return EXIT_CHECK_FAILED if design.claims_idempotence and exploration.broken else 0


def _command_zoo(args, progress: Progress) -> int:
    entries = selected(zoo_entries(), args.only)
    _prepare_dirs(args)
    outcomes = run_zoo(entries, args.work_dir, on_progress=progress.step)
    write_atomically(os.path.join(args.out, "zoo.json"),
                     json.dumps({"command": _command_line(), "outcomes": [o.to_json() for o in outcomes]}, indent=2) + "\n")
    write_atomically(os.path.join(args.out, "zoo.md"), zoo_markdown(outcomes, _command_line()))
    for o in outcomes:
        found = ", ".join(o.findings) or "nothing"
        control = "clean" if o.control_clean else ", ".join(o.control_findings)
        progress.done(f"{o.design}: expected {o.expect}, found {found}; control {control}:"
                      f" {'right' if o.as_expected else 'WRONG'}")
    wrong = [o for o in outcomes if not o.as_expected]
    progress.done(f"zoo: {len(outcomes) - len(wrong)} of {len(outcomes)} verdicts right;"
                  f" {os.path.join(args.out, 'zoo')}.{{json,md}}")
    return EXIT_CHECK_FAILED if wrong else 0


def _counts(text: str, option: str, what: str, example: str) -> list[int]:
    """A comma-joined list of whole numbers of 1 or more, or a one-line error naming the option."""
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise KilltestError(f"{option} takes comma-joined {what} of 1 or more, for example {example}, not {text!r}")
    return counts


def _command_scale(args, progress: Progress) -> int:
    designs = _designs(args.design)
    counts = _counts(args.workers_list, "--workers-list", "worker counts", "1,2,4")
    _prepare_dirs(args)
    campaigns = []
    for workers in counts:
        args.workers = workers
        plan = _timed_plan(args, designs, args.pace, f"scaling-{workers}w")
        plan = dataclasses.replace(plan, out_dir=os.path.join(args.out, "scaling"), plot=False)
        os.makedirs(os.path.join(plan.out_dir, "history"), exist_ok=True)
        campaigns.append((workers, run_campaign(plan, progress)))
    rows = scaling_rows(campaigns)
    settings = campaigns[0][1].settings
    write_atomically(os.path.join(args.out, "scaling.json"),
                     json.dumps({"command": _command_line(), "settings": settings, "rows": rows}, indent=2) + "\n")
    write_atomically(os.path.join(args.out, "scaling.md"), scaling_markdown(rows, _command_line(), settings))
    if not args.no_plot:
        plot_scaling(rows, os.path.join(args.out, "scaling.png"))
    for row in rows:
        progress.done(f"{row['design']} x{row['workers']}: wall {row['wall_s']}s, requests {row['requests']:g},"
                      f" repeated {row['repeated_requests']:g}, rows {row['rows']:g}")
    progress.done(f"results: {os.path.join(args.out, 'scaling')}.{{json,md,png}}")
    # A benchmark fails on a broken promise, not on a kill that came before eight workers had started.
    broken = [v for _, c in campaigns for v in c.verdicts if set(v.findings) - {"no_kill_landed"}]
    return EXIT_CHECK_FAILED if broken else 0


BENCH_PARTS = ("peers", "faults", "scale", "overhead")


def _command_bench(args, progress: Progress) -> int:
    from harness.bench.fault_table import EFFECT_DESIGNS, FAULT_DESIGNS, run_faults
    from harness.bench.overhead_run import measure_overhead
    from harness.bench.peers import peer_scenarios, run_peers
    from harness.bench.bench_tables import plot_peers, plot_scale
    from harness.bench.catalog_scale import run_scale

    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = [p for p in parts if p not in BENCH_PARTS]
    if unknown or not parts:
        raise KilltestError(f"--only takes {', '.join(BENCH_PARTS)}, comma-joined, not {args.only!r}")
    sizes = _counts(args.sizes, "--sizes", "product counts", "500,5000")
    peers = _designs(args.peer_design or list(PEER_DESIGNS))
    scaled = design_named(args.scale_design)
    os.makedirs(os.path.join(args.out, "bench"), exist_ok=True)
    path = os.path.join(args.out, "bench.json")
    results = _earlier_bench(path)
    results.update({"command": _command_line(), "machine": f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}"})
    work = os.path.join(args.out, "bench")
    if "peers" in parts:
        catalog = build_catalog()
        results["peers_settings"] = {"runs": args.runs, "seed": args.seed, "kills": args.kills,
                                     "products": len(catalog.products), "pace_rps": ARTICLE_PACE_RPS, "lease_s": LEASE_S}
        results["peers"] = run_peers(peers, peer_scenarios(args.kills), args.runs, args.seed, catalog,
                                     ARTICLE_PACE_RPS, LEASE_S, work, _command_line(), progress)
        _write_bench(results, args, path)
    if "faults" in parts:
        results["faults"] = run_faults(_designs(list(FAULT_DESIGNS)), _designs(list(EFFECT_DESIGNS)), args.seed,
                                       build_catalog(), ARTICLE_PACE_RPS, work, _command_line(), progress)
        _write_bench(results, args, path)
    if "scale" in parts:
        results["scale"] = run_scale(scaled, sizes, args.scale_kills, LEASE_S, work, args.work_dir, _command_line(),
                                     progress)
        _write_bench(results, args, path)
    if "overhead" in parts:
        results["overhead"] = measure_overhead(work, progress)
        _write_bench(results, args, path)
    if not args.no_plot:
        if results.get("peers"):
            plot_peers(results["peers"], os.path.join(args.out, "bench-peers.png"))
        if results.get("scale"):
            plot_scale(results["scale"], os.path.join(args.out, "bench-scale.png"))
    progress.done(f"results: {os.path.join(args.out, 'bench')}.{{json,md}} and bench-*.png")
    return 0


def _earlier_bench(path: str) -> dict:
    """An earlier bench.json, so `--only` refreshes one part and keeps the others' figures."""
    try:
        with open(path, encoding="utf-8") as earlier:
            return json.load(earlier)
    except (OSError, ValueError):
        return {}


def _write_bench(results: dict, args, path: str) -> None:
    from harness.bench.bench_tables import bench_markdown

    write_atomically(path, json.dumps(results, indent=2) + "\n")
    write_atomically(os.path.join(args.out, "bench.md"), bench_markdown(results))


def _raise_interrupt(signum, frame):
    # Once: a second Ctrl+C or SIGTERM (a shell and a supervisor both passing one on) must not cut
    # short the cleanup the first one started, or a scraper or a temporary directory is left behind.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    progress = Progress()
    # SIGTERM takes the same road as Ctrl+C, so every scraper is killed and every temp dir removed.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGINT, _raise_interrupt)
    try:
        args = build_parser().parse_args(argv)
        command = {"run": _command_run, "calibrate": _command_calibrate, "replay": _command_replay,
                   "explore": _command_explore, "zoo": _command_zoo, "scale": _command_scale,
                   "bench": _command_bench}[args.command]
        sys.exit(command(args, progress))
    except KilltestError as error:
        progress.done(f"killtest: error: {error}")
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        progress.done("killtest: interrupted; the runs that finished are kept in the results directory")
        sys.exit(EXIT_INTERRUPTED)

