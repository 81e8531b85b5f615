"""Every default value of killtest, in one module (as Scrapy's settings/default_settings.py).

A default is what a run uses when nobody said otherwise: a command-line option left out, a [zoo]
key a spec leaves out, a size a benchmark picks. The figures of the article's own experiment are not
defaults but facts, and they live once in harness/published.py; a default that is the article's
figure refers to it here, so changing the default never rewrites history.

If you add a default here:
- give it a comment saying why it has this value;
- use it from harness/options.py (the option table) when an option takes it, so `--help` shows it;
- document it in the option table's help text (the docs' CLI reference is generated from that table);
- if another module keeps its own name for it, that name should be imported from here.

This module is on the floor: it imports nothing from the rooms (fixture_site is outside harness).
"""

from __future__ import annotations

from killtest.fixture_site.catalog import DEFAULT_LISTING_PAGES, DEFAULT_PRODUCTS_PER_PAGE
from killtest.harness.published import ARTICLE_PACE_RPS, KILL_DELAY_S, KILLS_PER_RUN, LEASE_S, RUNS_PER_DESIGN

# --- A timed campaign (`killtest run`, `scale`, `calibrate`): the article's experiment by default.
RUNS = RUNS_PER_DESIGN  # 5 runs per design, as the article ran them
SCALE_RUNS = 1  # `killtest scale` is a benchmark: one run per worker count
CALIBRATE_RUNS = 2  # enough for a range per pace, few enough to sweep four paces
KILLS = KILLS_PER_RUN  # 10 SIGKILLs per run
KILL_DELAY = KILL_DELAY_S  # (0.2, 1.0) s after each start, uniform
SEED = 1  # run 1's seed; run r uses seed + r - 1
LEASE = LEASE_S  # 3 s, the article's lease
PACE_RPS = ARTICLE_PACE_RPS  # the article's site served about 140 requests a second (see published.py)
CALIBRATE_PACES = (0.0, 100.0, ARTICLE_PACE_RPS, 200.0)  # unpaced, below, the article's, above
LATENCY_S = 0.0  # the fixture site adds no latency unless asked
TIME_LIMIT_S = 120.0  # a full 500-product crawl with ten kills takes about ten seconds: twelve times that
SCALE_WORKERS = (1, 2, 4, 8)  # worker counts `killtest scale` compares
RESULT_NAME = "killtest"  # base name of a campaign's result files
OUT_DIR = "results"

# An aimed pause (--aim-pauses) waits at most this long for the worker's next product request, then stops it
# where it is, unaimed (the history's `paused` then has no aimed_at): a worker whose requests the site cannot
# credit to it (a recorded site's paths, a connection sock_diag cannot trace) must still be paused.
AIM_PAUSE_WAIT_S = 5.0

# --- A design of the user's own on timed kills (`run`): its pace is measured first (harness/running/pace.py).
# The unkilled start that measures it may take this long (a browser crawl of the article's shop: 200 s).
MEASURE_TIME_LIMIT_S = 900.0
# Kills count from the measured start-up times this: a later start may take a third longer to its first
# request (timings here move by a third from run to run), and a kill before it would prove nothing.
STARTUP_MARGIN = 1.35
# After the start-up, kills are spread over the measured work (harness/faults/schedule.py timed_schedule, spread): from
# KILL_DELAY's 0.2 s (or a fifth of the range, for a shorter crawl) to this share of the work, so a run kills starts
# before their first store write and long after it; not to its very end, where an unkilled crawl's own timing
# (which moves by a third from run to run) would often finish first and the kill would not land.
KILL_WINDOW_SHARE = 0.9
# The time limit: every kill at its latest, then this many unkilled crawls (a restart redoes some work and
# may wait out what the killed start held); never below TIME_LIMIT_S.
TIME_LIMIT_CRAWLS = 3.0
# Its kills count from each start's first request (`f` points, harness/faults/points/first_request.py), which is
# waited for this many measured start-ups after the spawn: past that the start is waiting (on a lock a killed
# start left: Crawlee's is 180 s), not starting, and is killed anyway so the run goes on.
FIRST_REQUEST_WAIT_STARTUPS = 3.0
# An `f` point written without its wait (`f0.4`, not `f0.4:8`) waits this long for the first request.
FIRST_REQUEST_WAIT_S = 10.0

# --- Restarts (--restart-delay, harness/option_kinds.py RestartDelay): what a supervisor waits between a kill and
# the next start. 0: at once, as the article's experiment restarted (its published schedule stays unchanged).
RESTART_DELAY_S = 0.0
# `--restart-delay backoff` is Kubernetes' CrashLoopBackOff: "the kubelet restarts them with an exponential back-off
# delay (10s, 20s, 40s, ...), that is capped at five minutes. Once a container has executed for 10 minutes without
# any problems, the kubelet resets the restart backoff timer" (kubernetes.io/docs/concepts/workloads/pods/
# pod-lifecycle/#restart-policy). A fixed delay is systemd's RestartSec= ("the time to sleep before restarting a
# service", systemd.service(5); its default is 100ms).
RESTART_BACKOFF_BASE_S = 10.0
RESTART_BACKOFF_CAP_S = 300.0
RESTART_BACKOFF_RESET_S = 600.0

# --- The fixture site's catalog: the article's 25 listing pages of 20 products (killtest.fixture_site.catalog).
LISTING_PAGES = DEFAULT_LISTING_PAGES
PER_PAGE = DEFAULT_PRODUCTS_PER_PAGE

# --- A start's scenario: one worker, no re-crawl, seeds of 1.
WORKERS = 1
RECRAWLS = 0
DRIFT_SEED = 1
TOXIC_SEED = 1

# --- Exact kill points (`killtest replay`, `explore`): a small catalog whose pages take milliseconds.
EXACT_LISTING_PAGES = 2
EXACT_PER_PAGE = 3
# A 0.2 s lease is still 50 times the slowest page of the small catalog, and it keeps the wait for a
# killed start's lease from dominating the run.
EXACT_LEASE_S = 0.2
EXACT_TIME_LIMIT_S = 60.0

# --- `killtest fuzz` (harness/campaigns/fuzzing.py): Hypothesis over mixed schedules on small catalogs.
# 60 schedules of about 0.5 s each: a search of a minute or two on two cores, which finds the zoo's
# lost-record designs in its first dozen examples.
FUZZ_EXAMPLES = 60

# --- The bug zoo (harness/faults/zoo_scenarios.py): the keys a [zoo] table may leave out.
ZOO_LISTING_PAGES = 2  # 6 products, 8 requests: a scenario runs in about a second
ZOO_PER_PAGE = 3
ZOO_LEASE_S = 1.0
ZOO_TIME_LIMIT_S = 20.0
ZOO_DRIFT_SEED = 1
# The correct design every zoo design runs beside, on the same scenario: it must come out clean.
# It is the reference, not the control (the control is whichever design says `control = true`).
ZOO_REFERENCE_DESIGN = "idempotent"

# --- The checks' thresholds.
# Requests per stored record and crawl above which a run is warned about (the article's health metric;
# a warning, not a failure): 1.05 is a perfect crawl of the article's site, and ten kills each costing
# the idempotent design a page or two stay below 1.1.
HEALTH_THRESHOLD = 1.25
# Against a --baseline: how much slower in percent of mean wall time per run, and how many more repeated
# requests per landed kill, still pass.
MAX_SLOWDOWN_PCT = 50.0
MAX_EXTRA_REPEATS = 0.5

# --- `killtest bench` (harness/bench/).
BENCH_PARTS = ("peers", "faults", "scale", "overhead")
BENCH_PEER_RUNS = 3  # runs per peer scenario
# The peer table's designs: the article's two and two other frameworks' crawlers.
BENCH_PEER_DESIGNS = ("naive", "idempotent", "scrapy-jobdir", "crawlee-fs")
# Catalog sizes of the scaling run, in products, 20 to a listing page as on the article's site.
BENCH_SIZES = (500, 5_000, 50_000, 100_000)
BENCH_SCALE_DESIGN = "idempotent"
BENCH_SCALE_KILLS = 3  # SIGKILLs per scaling run, at even shares of the crawl
# A fault-table cell: 500 products at the article's pace under a fault and three kills; a design that
# gives up slowly (Scrapy's retries, a held connection) still ends well inside four minutes.
BENCH_FAULT_TIME_LIMIT_S = 240.0

# --- A start that makes no request, prints nothing and changes no store file for this long is stuck:
# it is stopped and the run fails for liveness, instead of waiting out the whole time limit.
NO_PROGRESS_S = 30.0
# The last lines of each start's stderr and stdout the runner keeps in the history (`start_output`), and of
# those the last few a report quotes on liveness or a stall: enough for a framework's last log line or two
# (Crawlee says why it waits every 13 s) without printing a whole log.
OUTPUT_TAIL_LINES = 10
QUOTED_LINES = 3
# A start that went this long without a request after its first one stalled (it waited on a lock, a
# lease, a slow page): the report quotes what it said, even when the crawl finished.
STALL_S = 10.0

# --- The disk model (harness/faults/disk_model.py holds each profile's figures and source): off by default.
DISK_PROFILES = ("nvme", "consumer-ssd", "cloud-volume", "hdd")

# --- `killtest cases` (issue 44): each release's aimed schedule runs this many times, and as many runs of timed
# kills spread over its crawl; a case's own `repeat` caps it (campaigns/case_runs.py).
CASE_REPEAT = 5
