"""The one table of killtest's options: it feeds argparse, the [zoo] keys and the printed replay lines.

Each `Option` is one flag as one set of commands takes it: its help text, its default (from
harness/defaults.py), how its text is parsed and checked, the `--help` group it is shown in, the
[zoo] key that sets it in a zoo design's spec, and whether a replay line repeats it. A flag that
means something different to another command (bench's `--runs` counts peer runs) is its own record.

Three things are made from the table, so they cannot drift apart:
- the argparse options of every command (harness/cli/command.py adds them, group by group);
- `ZOO_KEYS`, the keys a spec's [zoo] table may hold (harness/faults/zoo_scenarios.py);
- `replay_words`, the flags of a printed `killtest replay ...` line (the zoo's and explore's).
The order of the table is the order of `--help` within a group and of the flags of a replay line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from killtest.harness import defaults as d
from killtest.harness.option_kinds import (
    COMMAND_NAMES,
    GROUPS,
    Option,
    RestartDelay,
    not_negative,
    parse_restart_delay,
    positive,
)

__all__ = ["COMMAND_NAMES", "GROUPS", "OPTIONS", "Option", "ZOO_KEYS", "not_negative", "options_of", "positive",
           "replay_words"]


RUNS = ("run", "scale", "calibrate")  # the timed campaigns
EXACT = ("replay", "explore")  # the commands that run exact kill points on a small catalog
EXACT_AND_FUZZ = (*EXACT, "fuzz")  # fuzz draws its own small catalogs
RUN_AND_REPLAY = ("run", "replay")
_DESIGN_HELP = ("a design to test: a built-in name (naive, idempotent, zoo-...) or the path of a design spec (.toml);"
                " repeat it or join them with commas")
_SCHEDULE_HELP = ("exact kill points instead of timed kills, comma-joined: t<seconds>, r<request>, d<seconds>:<grace>,"
                  " s<seconds>, p<seconds>:<paused>, l:<file>:<function>+<offset>:<hit> or l:<file>:<line>:<hit>"
                  " (for example r5,l:scrapers/idempotent.py:complete+8:2); see docs/reference/kill-points.md")

OPTIONS: tuple[Option, ...] = (
    # Each command's own options: what it runs.
    Option("--design", _DESIGN_HELP, ("run",), action="append", required=True),
    Option("--design", "the design to run", ("replay",), action="append", required=True, replayed=True),
    Option("--design", "the design to explore: a built-in name or a spec path", ("explore",), required=True),
    Option("--design", "designs to scale (names or spec paths)", ("scale",), action="append", required=True),
    Option("--design", "the design to fuzz: a built-in name or a spec path", ("fuzz",), required=True),
    Option("--design", "the design spec to record; its [site] table names the WARC and start URL", ("record",),
           required=True),
    Option("--design", "serve the recording this spec's [site] table names (default: the shop)", ("serve",)),
    Option("--resolve", "while recording, reach HOST[:PORT] at 127.0.0.1:PORT (repeatable)", ("record",),
           action="append", default=()),
    Option("--insecure-upstream", "do not verify the recorded site's certificate", ("record",), action="store_true"),
    Option("--time-limit", f"seconds each run may take (default {d.TIME_LIMIT_S:g})", ("record",),
           type=positive(float), default=d.TIME_LIMIT_S),
    Option("--port", "the port on 127.0.0.1 (default 0: a free one)", ("serve",), type=not_negative(int), default=0),
    Option("--schedule", _SCHEDULE_HELP, ("run",), group="campaign"),
    Option("--schedule", "the kill points, as printed by the failure", ("replay",), required=True,
           zoo_key="schedule", replayed=True),
    Option("--expect", "the findings of the failure this line was printed for (comma-joined codes, as a printed"
           " line gives them): the replay says whether it reproduced them, and why not when it did not", ("replay",),
           metavar="FINDINGS", replayed=True),
    Option("--only", "explore just these kill points (comma-joined, as --schedule)", ("explore",)),
    Option("--only", "run just these zoo designs (comma-joined names)", ("zoo",)),
    Option("--examples", f"schedules Hypothesis tries before it gives up finding a failure (default {d.FUZZ_EXAMPLES})",
           ("fuzz",), "campaign", positive(int), d.FUZZ_EXAMPLES),
    Option("--seed", f"seed of Hypothesis's search; the same seed tries the same schedules (default {d.SEED})",
           ("fuzz",), "campaign", int, d.SEED),
    Option("--max-seconds", "stop searching after this many seconds (default: no limit); shrinking a failure"
           " found in time still runs", ("fuzz",), "campaign", positive(float), metavar="SECONDS"),
    Option("--jobs", "points (explore) or searches (fuzz) run in this many processes at once, each with its own"
           " site, work dir and servers (default: the number of cores)", ("explore", "fuzz"), "campaign",
           positive(int), metavar="N"),
    Option("--power-cut", "also cut the power: explore adds xw<n> after each store write w<n>, fuzz draws x, xr and"
           " xw points (a file store under the work dir, FUSE)", ("explore", "fuzz"), "campaign", action="store_true"),
    Option("--only", f"which parts to run, comma-joined (default {','.join(d.BENCH_PARTS)}); the others keep their"
           " figures from an earlier bench.json", ("bench",), default=",".join(d.BENCH_PARTS)),
    Option("--paces", "comma-separated site paces in requests per second, 0 for unpaced"
           f" (default {','.join(f'{p:g}' for p in d.CALIBRATE_PACES)})", ("calibrate",),
           default=",".join(f"{p:g}" for p in d.CALIBRATE_PACES)),
    Option("--workers-list", f"worker counts, comma-joined (default {','.join(map(str, d.SCALE_WORKERS))})",
           ("scale",), default=",".join(map(str, d.SCALE_WORKERS))),
    # A campaign's runs and kills.
    Option("--runs", f"runs per design (default {d.RUNS})", ("run",), "campaign", positive(int), d.RUNS),
    Option("--runs", f"runs per design (default {d.SCALE_RUNS})", ("scale",), "campaign", positive(int), d.SCALE_RUNS),
    Option("--runs", f"runs per design (default {d.CALIBRATE_RUNS})", ("calibrate",), "campaign", positive(int),
           d.CALIBRATE_RUNS),
    Option("--kills", f"SIGKILLs per run before the last start runs to the end (default {d.KILLS})", RUNS,
           "campaign", not_negative(int), d.KILLS),
    Option("--seed", f"seed of run 1; run r uses seed + r - 1 (default {d.SEED})", RUNS, "campaign", int, d.SEED),
    Option("--kill-delay", "the range a kill lands in after each start, LOW,HIGH seconds"
           f" (default {d.KILL_DELAY[0]},{d.KILL_DELAY[1]})", ("scale", "calibrate"), "campaign",
           default=f"{d.KILL_DELAY[0]},{d.KILL_DELAY[1]}"),
    Option("--kill-delay", "the range a kill lands in after each start, LOW,HIGH seconds, used exactly; fLOW,HIGH:WAIT"
           " counts from each start's first request, waited for WAIT s; fLOW~HIGH:WAIT spreads the kills over that"
           " range, one in each slice of it (default: the built-in designs"
           f" {d.KILL_DELAY[0]},{d.KILL_DELAY[1]}; a design of your own: spread over its whole work, f0.2~HIGH with"
           " HIGH nine tenths of the work and a wait of three start-ups, measured from one unkilled start)",
           ("run",), "campaign"),
    # The catalog, then what a run meets: in this order on a replay line.
    Option("--listing-pages", f"listing pages in the catalog (default {d.LISTING_PAGES})", RUNS, "site",
           positive(int), d.LISTING_PAGES),
    Option("--listing-pages", f"listing pages in the catalog (default {d.EXACT_LISTING_PAGES})", EXACT, "site",
           positive(int), d.EXACT_LISTING_PAGES, replayed=True),
    Option("--per-page", f"products per listing page (default {d.PER_PAGE})", RUNS, "site", positive(int),
           d.PER_PAGE),
    Option("--per-page", f"products per listing page (default {d.EXACT_PER_PAGE})", EXACT, "site", positive(int),
           d.EXACT_PER_PAGE, replayed=True),
    Option("--listing-pages", f"listing pages in the shop (default {d.LISTING_PAGES})", ("serve",), "site",
           positive(int), d.LISTING_PAGES),
    Option("--per-page", f"products per listing page (default {d.PER_PAGE})", ("serve",), "site", positive(int),
           d.PER_PAGE),
    Option("--lease", f"lease length in seconds for designs that take one (default {d.LEASE:g})", ("run", "scale"),
           "scenario", positive(float), d.LEASE),
    Option("--lease", f"lease length in seconds (default {d.EXACT_LEASE_S:g})", EXACT_AND_FUZZ, "scenario",
           positive(float), d.EXACT_LEASE_S, zoo_key="lease", replayed=True),
    Option("--time-limit", f"seconds a run may take before it is a liveness failure (default {d.TIME_LIMIT_S:g})",
           ("scale", "calibrate"), "scenario", positive(float), d.TIME_LIMIT_S),
    Option("--time-limit", "seconds a run may take before it is a liveness failure, used exactly (default"
           f" {d.TIME_LIMIT_S:g}; for a design of your own on timed kills, raised to every kill at its latest plus"
           f" {d.TIME_LIMIT_CRAWLS:g} of its crawls, measured from one unkilled start)", ("run",), "scenario",
           positive(float)),
    Option("--time-limit", "seconds a run may take before it is a liveness failure"
           f" (default {d.EXACT_TIME_LIMIT_S:g})", EXACT_AND_FUZZ, "scenario", positive(float), d.EXACT_TIME_LIMIT_S,
           zoo_key="time_limit", replayed=True),
    Option("--no-progress-timeout", "stop a start that makes no request, prints nothing and changes no store file"
           f" for this many seconds, not counting time it waited for a CPU or on a page the site held"
           f" (--slow-page, latency): a liveness failure"
           f" (default {d.NO_PROGRESS_S:g})", (*RUNS, "replay", "explore"),
           "scenario", positive(float), d.NO_PROGRESS_S),
    # issue 43: a supervisor restarts a killed crawler after a delay, and a crawler may wait out on restart what
    # the dead start held (feapder's REQUEST_LOST_TIMEOUT): the delay decides whether it must.
    Option("--restart-delay", "wait this long between a kill and the next start, as a supervisor restarts a crawler:"
           " seconds, every time (as systemd's RestartSec=), or backoff, Kubernetes' CrashLoopBackOff"
           f" ({d.RESTART_BACKOFF_BASE_S:g} s, doubling, capped at {d.RESTART_BACKOFF_CAP_S:g} s, back to"
           f" {d.RESTART_BACKOFF_BASE_S:g} s after a start that ran {d.RESTART_BACKOFF_RESET_S / 60:g} min), or"
           " backoff:BASE:CAP; the waits do not count against --time-limit (default"
           f" {RestartDelay()}: at once)", ("run", "replay", "explore", "fuzz"), "scenario", parse_restart_delay,
           RestartDelay(), metavar="DELAY", replayed=True),
    Option("--strict", "hold every design to the idempotence promises even where its spec waives them, as"
           " explore --strict and fuzz --strict do (their replay lines say --strict for such a design)", ("replay",),
           "scenario", action="store_true", replayed=True),
    Option("--no-prefork", "start a new interpreter for every start instead of forking one that imported the design"
           " already (slower, and lease expiry may then race the start-up)", EXACT_AND_FUZZ, "scenario",
           action="store_true", replayed=True),
    Option("--workers", f"worker processes per start, sharing one store; a kill hits them all (default {d.WORKERS})",
           RUN_AND_REPLAY, "scenario", positive(int), d.WORKERS, zoo_key="workers", replayed=True),
    Option("--recrawls", "after the killed crawl, crawl the same store again this many times, unkilled; a design"
           f" must take {{crawl}} (default {d.RECRAWLS})", RUN_AND_REPLAY, "scenario", not_negative(int), d.RECRAWLS,
           zoo_key="recrawls", replayed=True),
    Option("--drift", "the site's content changes before every re-crawl: changed=0.1,removed=0.02,added=0.02"
           " (shares of the catalog; with --recrawls or --drift-during); see fixture_site/catalog.py",
           RUN_AND_REPLAY, "site", metavar="SPEC", zoo_key="drift", replayed=True),
    Option("--drift-during", "with --drift: the site also changes once this long into the killed crawl",
           RUN_AND_REPLAY, "site", positive(float), metavar="SECONDS", replayed=True),
    Option("--drift-seed", f"seed of the drift (default {d.DRIFT_SEED})", RUN_AND_REPLAY, "site", int, d.DRIFT_SEED,
           replayed=True),
    Option("--slow-page", "make one page of the site this slow, for example /product/1=0.6 (repeatable)",
           RUN_AND_REPLAY, "site", default=(), action="append", metavar="PATH=SECONDS", zoo_key="slow_pages",
           replayed=True),
    Option("--toxics", "network faults the site injects, for example error=0.05,throttle=0.03,reset=0.02,"
           "truncate=0.02,timeout=0.01,latency=0.002,jitter=0.001,only=/product/ (see docs/reference/toxics.md)",
           RUN_AND_REPLAY, "site", metavar="SPEC", replayed=True),
    Option("--toxic-seed", "seed of run 1's faults; run r uses seed + r - 1, the same for every design"
           f" (default {d.TOXIC_SEED})", RUN_AND_REPLAY, "site", int, d.TOXIC_SEED, replayed=True),
    Option("--latency", f"added per-request latency of the fixture site, seconds (default {d.LATENCY_S:g})", RUNS,
           "site", not_negative(float), d.LATENCY_S),
    Option("--latency", "added per-request latency of the fixture site, seconds (default 0; a failed run's replay"
           " line gives the run's)", ("replay",), "site", not_negative(float), 0.0, replayed=True),
    Option("--pace", "the most requests a second the site serves, 0 for as many as the machine can (default 0; a"
           " failed run's replay line gives the run's)", ("replay",), "site", not_negative(float), 0.0, replayed=True),
    Option("--pace", "the most requests a second the site serves, 0 for as many as the machine can"
           f" (default {d.PACE_RPS:g}, the article's site: see harness/published.py)", RUNS, "site",
           not_negative(float), d.PACE_RPS),
    # What else fails or warns.
    Option("--check-faster", "also fail unless each idempotent design's total wall time over the shared schedules"
           " beats the naive control's (a timing check: make killtest sets it)", ("run",), "checks",
           action="store_true"),
    Option("--health-threshold", "warn when a run makes more requests per stored record and crawl than this, the"
           f" article's health metric (default {d.HEALTH_THRESHOLD:g}; a warning, not a failure)", RUNS, "checks",
           positive(float), d.HEALTH_THRESHOLD),
    Option("--baseline", "a saved killtest.json: fail when a design regresses against it"
           " (see harness/check/baseline.py)", ("run",), "baseline", metavar="JSON"),
    Option("--max-slowdown", "with --baseline: how much slower, in percent of mean wall time per run, still passes"
           f" (default {d.MAX_SLOWDOWN_PCT:g})", ("run",), "baseline", not_negative(float), d.MAX_SLOWDOWN_PCT,
           metavar="PCT"),
    Option("--max-extra-repeats", "with --baseline: how many more repeated requests per landed kill still pass,"
           f" for a design that claims idempotence (default {d.MAX_EXTRA_REPEATS:g})", ("run",), "baseline",
           not_negative(float), d.MAX_EXTRA_REPEATS),
    # `killtest bench`.
    Option("--peer-design", f"designs for the peer table (default {','.join(d.BENCH_PEER_DESIGNS)})", ("bench",),
           "peers", action="append"),
    Option("--runs", f"runs per peer scenario (default {d.BENCH_PEER_RUNS})", ("bench",), "peers", positive(int),
           d.BENCH_PEER_RUNS),
    Option("--kills", f"kills per peer run (default {d.KILLS})", ("bench",), "peers", not_negative(int), d.KILLS),
    Option("--seed", f"seed of the peers' run 1 (default {d.SEED})", ("bench",), "peers", int, d.SEED),
    Option("--sizes", f"catalog sizes for the scaling run, in products (default {','.join(map(str, d.BENCH_SIZES))})",
           ("bench",), "catalog scaling", default=",".join(map(str, d.BENCH_SIZES))),
    Option("--scale-design", f"the design to scale (default {d.BENCH_SCALE_DESIGN})", ("bench",), "catalog scaling",
           default=d.BENCH_SCALE_DESIGN),
    Option("--scale-kills", f"SIGKILLs per scaling run, at even shares of the crawl (default {d.BENCH_SCALE_KILLS})",
           ("bench",), "catalog scaling", not_negative(int), d.BENCH_SCALE_KILLS),
    # Where the results go.
    Option("--name", f"base name of the result files (default {d.RESULT_NAME})", ("run",), "results",
           default=d.RESULT_NAME),
    Option("--out", f"directory for results (default {d.OUT_DIR}/)", tuple(c for c in COMMAND_NAMES if c not in
                                                                         ("record", "check-recording")),
           "results", default=d.OUT_DIR),
    # issue 27: the recording itself lands beside the spec; a report of it only where asked.
    Option("--out", "also write record.json and record.md to this directory: the WARC's size, exchanges, distinct"
           " requests and revisit records, the reference, what changed, the scan's suspects (default: none)",
           ("record",), "results", metavar="DIR"),
    Option("--out", "also write check-recording.json to this directory: every suspect of every file scanned"
           " (default: none)", ("check-recording",), "results", metavar="DIR"),
    Option("--work-dir", "existing directory for the scrapers' stores while they run (default: system temp)", RUNS,
           "results"),
    Option("--work-dir", "existing directory for the scrapers' stores", ("replay", "explore", "fuzz", "zoo", "bench"),
           "results"),
    Option("--junit-xml", "also write a JUnit XML report to PATH (a test case per run, crash point, schedule or zoo"
           " design); GITHUB_STEP_SUMMARY gets the Markdown", ("run", "replay", "explore", "fuzz", "zoo"), "results",
           metavar="PATH"),
    Option("--no-plot", "skip the PNG plots", (*RUNS, "bench"), "results", action="store_true"),
    Option("--all-timelines", "draw a timeline for every run (default: each design's first run and every failed"
           " run)", RUNS, "results", action="store_true"),
    # `killtest cases` (issue 23): real frameworks at pinned releases, scrapers/cases/.
    Option("--only", "run just these cases (comma-joined folder names under scrapers/cases/)", ("cases",)),
    Option("--release", "run just this release (version) of the selected cases", ("cases",)),
    Option("--rebuild", "build each release's environment again, even when a complete one is cached", ("cases",),
           action="store_true"),
    # issue 34: where a case's verdict changes, between two releases the registry lists.
    Option("--bisect", "find the releases where CASE's verdict changes: run its schedule on the registry's releases"
           " between --from and --to, as few as a binary search needs", ("cases",), metavar="CASE"),
    Option("--from", "with --bisect: the oldest release (default: the case's oldest pinned one)", ("cases",),
           metavar="VERSION"),
    Option("--to", "with --bisect: the newest release (default: the case's newest pinned one)", ("cases",),
           metavar="VERSION"),
    Option("--report", "write an upstream-ready report of each flagged release of CASE (or of --release) from a run"
           " of its own: results/cases/<case>/<release>/report.md", ("cases",), metavar="CASE"),
    Option("--explore", "explore each release of CASE (or --release) at every store write and with power cuts, on"
           " the case's catalog: results/cases/<case>/explore.{json,md}", ("cases",), metavar="CASE"),
    Option("--jobs", "runs (with --explore: points) in this many processes at once (default 1; with --explore 2;"
           " a case whose runs mostly wait out a framework's lock can take more than the cores:"
           " crawlee-node-2085-locking)", ("cases",), type=positive(int), metavar="N"),
    # issue 44: a verdict rests on several runs: the aimed schedule repeated, and timed kills spread over the crawl.
    Option("--repeat", "runs of each release's aimed schedule, and as many with timed kills spread over its crawl"
           " (default 5; a case's own `repeat` in its case.toml caps it)", ("cases",), type=positive(int),
           metavar="N"),
    Option("--aimed-only", "run each release's aimed schedule only, no runs of kills spread over its crawl (a quick"
           " check of a verdict: its row says the spread runs were not run)", ("cases",), action="store_true"),
    Option("--pre", "with --bisect: count prereleases among the releases", ("cases",), action="store_true"),
    Option("--every", "with --bisect: run every release in the range, not a binary search", ("cases",),
           action="store_true"),
    # `killtest envs` (issue 36): the envs built on first use, listed with their size, removed on request.
    Option("--remove", "remove these cached envs: a hash, KIND/HASH, or a kind (cases, tools, designs) for all of"
           " its envs (repeatable)", ("envs",), action="append", metavar="NAME"),
    Option("--remove-all", "remove every cached env; each is built again when next needed", ("envs",),
           action="store_true"),
    # issue 24: explore and fuzz judge a design by its spec's promises; --strict holds it to every idempotence one.
    Option("--strict", "hold the design to every idempotence promise even where its spec waives them (by default"
           " a waived promise's findings are counted in one line, not as broken points); replay lines say --strict",
           ("explore", "fuzz"), "scenario", action="store_true"),
    # The disk model (harness/faults/disk_model.py): what a flush costs the design and its store's server.
    Option("--disk", f"make every fsync/fdatasync of the design and its PostgreSQL or Redis cost what this disk's does:"
           f" {', '.join(d.DISK_PROFILES)} or none (default none; strace delays them)", (*RUNS, "replay"), "scenario",
           metavar="PROFILE"),
    Option("--fsync-latency", "instead of --disk: every flush system call takes this many seconds more",
           (*RUNS, "replay"), "scenario", not_negative(float), metavar="SECONDS"),
    Option("--aim-pauses", "while one worker is paused, the site reprices the product page it fetched last when"
           " another worker asks for it, so a zombie commit always puts back a stale price", RUN_AND_REPLAY,
           "scenario", action="store_true", zoo_key="aim_pauses", replayed=True),
    Option("--database", "directory where fuzz keeps every failure it finds, per design fingerprint, and replays"
           " them first on the next fuzz of the same design (default OUT/fuzz-database)", ("fuzz",), "results",
           metavar="DIR"),
)

# The keys of a [zoo] table that describe the mistake rather than set an option.
ZOO_SCENARIO_KEYS = {
    "mistake": "the classic mistake the zoo design makes, in a few words (the zoo table's first column)",
    "expect": "the finding the checker must report on the zoo design (a finding code)",
    "control_schedule": "the reference design's kill points, where the zoo's name a line of the zoo design"
                        " (default: schedule)",
    "reference": "the correct design the zoo design runs beside, its fixed twin (default: idempotent)",
}
# Every key a spec's [zoo] table may hold -> one line on what it sets.
# A [zoo] table's own defaults differ from the replay command's (a longer lease, a shorter time limit).
ZOO_DEFAULTS = {"lease": d.ZOO_LEASE_S, "time_limit": d.ZOO_TIME_LIMIT_S}


def _zoo_key_help(option: Option) -> str:
    """What a [zoo] key sets: the replay option's help, with the zoo's default instead of the command's."""
    text = re.sub(r" \(default [^)]*\)$", "", option.help)
    zoo_default = ZOO_DEFAULTS.get(option.zoo_key or "")
    return f"{option.flag} of the replay: {text}" + (f" (default {zoo_default:g})" if zoo_default is not None else "")


ZOO_KEYS: dict[str, str] = {**ZOO_SCENARIO_KEYS, **{o.zoo_key: _zoo_key_help(o) for o in OPTIONS
                                                    if o.zoo_key is not None}}


def options_of(command: str) -> list[Option]:
    """The options `command` takes, in the table's order."""
    return [option for option in OPTIONS if command in option.commands]


def replay_words(values: Mapping[str, Any]) -> list[str]:
    """The flags of a `killtest replay` line that repeats these settings, keyed by option dest.

    A setting that is None, False or empty is left out; the order is the table's, so a printed line
    reads the same every time. A key that no replayed option has is a mistake of the caller.
    """
    replayed = [option for option in options_of("replay") if option.replayed]
    unknown = set(values) - {option.dest for option in replayed}
    if unknown:
        raise ValueError(f"a replay line cannot repeat {', '.join(sorted(unknown))}")
    return [word for option in replayed if option.dest in values for word in option.words(values[option.dest])]
