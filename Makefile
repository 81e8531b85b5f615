# Every target runs inside .venv, which the first target that needs it builds from pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: killtest baseline zoo incident bench bench-workers test check lint calibrate bench-explore docs clean cases bench-disk analyses

# The machine the experiment pretends to run on (docs/explanation/article-reproduction.md, "A disk model"):
# empty is the pace-only run; the closest disk model for the naive control is ARTICLE_MODEL (make killtest
# MODEL="$(ARTICLE_MODEL)"). The closest of all, CONTROL=naive-page-commit MODEL="--pace 300 --disk consumer-ssd",
# reads the article's naive scraper in a way its requests column rules out; the report names it while a column is missed.
ARTICLE_MODEL := --pace 140 --disk consumer-ssd
MODEL ?=
# The naive control: naive (a commit per product) or naive-page-commit (a commit per listing page, the other
# reading of the article's "commits as it goes": docs/explanation/article-reproduction.md).
CONTROL ?= naive
EXPERIMENT := run --design $(CONTROL) --design idempotent --runs 5 --kills 10 --seed 1 --lease 3 --check-faster $(MODEL)

# The article's experiment: five runs per design, ten SIGKILLs each, 3 s lease, same schedules;
# it also fails when a design regresses against the saved results/baseline.json.
killtest: $(STAMP)
	$(BIN)/killtest $(EXPERIMENT) --out results --baseline results/baseline.json

# Save a new baseline: the same experiment, its killtest.json kept as results/baseline.json.
baseline: $(STAMP)
	$(BIN)/killtest $(EXPERIMENT) --out results/baseline-run
	cp results/baseline-run/killtest.json results/baseline.json

# The bug zoo: each known mistake must get its own finding, the correct design none (also in make test).
zoo: $(STAMP)
	$(BIN)/killtest zoo --out results

# Firecrawl's incident (seeds/002) scaled down 60 times, on a private Redis: the same kills and a redeploy
# (SIGTERM, SIGKILL 50 ms later) against BullMQ locks of 2 min / 15 s (recovers) and 2 h / 30 min
# (stalls). Exit status 1 is the expected verdict: the 2 h lock must fail for liveness.
incident: $(STAMP)
	status=0; $(BIN)/killtest run --design queue-bullmq --design queue-bullmq-2h --runs 1 \
		--schedule r60,d0.3:0.05,r150 --time-limit 20 --name incident --out results || status=$$?; \
		test $$status -eq 1

# Measurements, not tests (about 35 minutes): Scrapy's JOBDIR and Crawlee beside our designs under the
# same kills, the idempotent design at 500 to 100,000 products against the site's ceiling, and
# the harness's own share of make killtest. results/bench.{json,md}, results/bench-*.png
bench: $(STAMP)
	$(BIN)/killtest bench --out results

# Worker scaling, a benchmark: 1, 2, 4 and 8 workers per start on one store, three kills a run hitting
# all of them, a site that answers each request after 20 ms in parallel (unpaced). results/scaling.*
bench-workers: $(STAMP)
	$(BIN)/killtest scale --design idempotent --design idempotent-pg --design queue-bullmq \
		--workers-list 1,2,4,8 --runs 2 --kills 3 --pace 0 --latency 0.02 --out results

# The suite in two steps, side by side (tests/steps.py): the tests that are isolated on six xdist workers
# (more than the cores: most of a test's time is waiting on subprocesses, servers and sleeps) in the background
# (SCHED_IDLE at nice 10: a core only when no normal process wants one), and beside them the `serial` ones at
# normal priority, two at a time (where the kernel's autogroup is on, as on most desktops, after them instead):
# they are timing-sensitive but mostly sleep, so the scheduler gives them a core whenever they wake and the
# rest takes what is left. A test in the background must reach the same verdict on a starved machine (one
# known exception, the fast lane's BullMQ `s` test: docs/reference/tests.md). Their output is printed after the
# rest's. In a fresh clone one collection comes first, to fill pytest's assertion-rewrite cache. The `hosts`
# test (ssh test hosts, minutes) is a step of its own in .ci/run.
# Bytecode is cached even where the environment says not to (this kind of machine sets
# PYTHONDONTWRITEBYTECODE=1): the suite starts thousands of interpreters that import killtest, and
# compiling it afresh in each cost 8% of the suite's CPU (measured: 349 s -> 326 s on two cores).
test: $(STAMP)
	$(BIN)/python tests/steps.py

# The fast lane, for after every change (under 2 minutes on two cores from a warm .venv): unit tests of every room
# and one end-to-end kill test per kind of fault (`@pytest.mark.fault`), everything not marked slow, serial or hosts.
# make test is the whole suite; docs/reference/tests.md says what each lane holds.
check: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n 4 --dist worksteal -q --durations=5 -m "not slow and not serial and not hosts"

# Ruff and mypy, configured in pyproject.toml; CI runs it before the tests.
lint: $(STAMP)
	$(BIN)/ruff check .
	rm -rf .typecheck && mkdir -p .typecheck/killtest
	for module in killtest/*.py; do ln -s ../../$$module .typecheck/$$module; done
	for room in harness fixture_site scrapers; do ln -s ../../$$room .typecheck/killtest/$$room; done
	$(BIN)/mypy

# Naive control at several site paces: shows which pace brings this machine nearest the published band.
calibrate: $(STAMP)
	$(BIN)/killtest calibrate --runs 5 --out results/calibration

# The built-in designs under each disk profile (harness/bench/disk_profiles.py): results/bench-disk.{json,md,png}
bench-disk: $(STAMP)
	$(BIN)/python -m killtest.harness.bench.disk_profiles --out results

# How many exact kill schedules a minute this machine checks (a benchmark, not a test): a new interpreter per
# start against pre-forked starts for the idempotent design; then explore's schedules a minute at -j 1 and
# -j 2 for the idempotent design, the naive control and two black-box designs reached through strace, and
# what tracing adds to a start and to a write (harness/bench/explore_rate.py). results/bench-explore/
bench-explore: $(STAMP)
	$(BIN)/killtest explore --design idempotent --no-prefork --lease 0.5 -j 1 --out results/bench-explore/subprocess
	$(BIN)/killtest explore --design idempotent --no-prefork -j 1 --out results/bench-explore/subprocess-short-lease
	$(BIN)/killtest explore --design idempotent -j 1 --out results/bench-explore/prefork
	$(BIN)/python -m killtest.harness.bench.explore_rate --out results/bench-explore

# Regenerate the reference tables of docs/reference/ (findings, checks, history events, spec keys, CLI
# options) from the code; tests/test_docs.py fails when they differ.
docs: $(STAMP)
	$(BIN)/python -m killtest.harness.report.reference --write

# Real frameworks at pinned releases (scrapers/cases/, issue 23): each release's env built once in
# ~/.cache/killtest/cases/, the buggy release flagged and the fixed one clean on the same schedule, each
# verdict a frequency (issue 44): the aimed schedule REPEAT times and as many runs of kills spread over the
# crawl, CASE_JOBS runs at once; then docs/explanation/analyses.md is written from results/cases.json.
# Exit 1 when a release deviates.
REPEAT ?= 5
CASE_JOBS ?= 2
cases: $(STAMP)
	status=0; $(BIN)/killtest cases --repeat $(REPEAT) -j $(CASE_JOBS) --out results || status=$$?; \
		$(BIN)/python -m killtest.harness.report.case_table --write; exit $$status

# Issue 34's whole measure, one run set (issue 44): `make cases`, then each case with a fixed release bisected
# on the registry's releases (CASE, CASE:FROM or CASE:FROM:every; FROM the oldest release when the pinned ones
# are not; every: each release in the range, so a crash's move is found too, not only the verdict's), then the
# cases' releases explored at every store write and power cut (a candidate fix's patched release beside the
# published one), each flagged release's report.md from a run of its own (refused at a dirty commit), and the
# page written again; the time printed. Hours.
BISECT_CASES = crawlee-node-1736:3.0.4:every crawlee-node-2085:3.5.4 crawlee-node-2085-locking:3.5.8 scrapy-7094 \
	apify-sdk-python-1097 crawlee-python-1825
REPORT_CASES = crawlee-node-2085 crawlee-node-1736 crawlee-node-2085-locking apify-sdk-python-1097 crawlee-python-1825 \
	scrapy-4106 scrapy-7094
# CASE or CASE:JOBS: crawlee-node-2085-locking's runs mostly wait out Crawlee's 180 s request locks, idle, so
# its points run 8 at once. bullmq-max-stalled is left out: its loss needs two kills (its README).
EXPLORE_CASES = scrapy-7094 scrapy-4106 crawlee-node-2085 crawlee-node-1736 crawlee-python-1825 apify-sdk-python-1097 \
	apify-sdk-python-1103 bullmq-at-least-once crawlee-node-2085-locking:8
analyses: $(STAMP)
	@start=$$(date +%s); status=0; \
	$(BIN)/killtest cases --repeat $(REPEAT) -j $(CASE_JOBS) --out results || status=$$?; \
	for spec in $(BISECT_CASES); do case=$${spec%%:*}; rest=$${spec#$$case}; rest=$${rest#:}; \
		from=$${rest%%:*}; every=$${rest#$$from}; \
		$(BIN)/killtest cases --bisect $$case $${from:+--from $$from} $${every:+--every} --out results || status=1; done; \
	for spec in $(EXPLORE_CASES); do case=$${spec%%:*}; jobs=$${spec#$$case}; \
		$(BIN)/killtest cases --explore $$case $${jobs:+-j $${jobs#:}} --out results || status=1; done; \
	for case in $(REPORT_CASES); do $(BIN)/killtest cases --report $$case --out results || status=1; done; \
	$(BIN)/python -m killtest.harness.report.case_table --write; \
	echo "make analyses: $$(( $$(date +%s) - start )) s in all (exit $$status)"; exit $$status

# Every extra in one resolver pass (pip check is clean): the programs killtest runs at exact pins (the
# recording proxy, the peer designs' frameworks) are built in envs of their own on first use, not here.
# --clear: the venv holds what pyproject.toml says now, not what an older one installed (mitmproxy).
# uv installs them (pip installs uv, and keeps a current pip in the venv, which killtest's env builds use): its
# downloads and bytecode compiling run in parallel, where pip's run one at a time on one core, and this is the
# first step of every fresh clone and of CI, with nothing beside it. Measured from empty caches on two cores:
# 25.5 s with pip, 14.8 s with uv. The bytecode is compiled at install, as pip does, because this machine kind
# sets PYTHONDONTWRITEBYTECODE=1 and make killtest's starts would otherwise compile requests and Flask each time.
# uv is pinned (a build tool, like the frameworks' pins); it does not read pip's configuration: behind a package
# mirror, set UV_DEFAULT_INDEX as well as pip's index.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv --clear $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv==0.13.9
	$(BIN)/uv pip install --quiet --python $(BIN)/python --compile-bytecode -e '.[all,test,lint]'
	touch $(STAMP)

clean:
	rm -rf $(VENV) .typecheck .pytest_cache .hypothesis build *.egg-info
