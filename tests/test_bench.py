"""`killtest bench` and its parts: what they compute, on small inputs; the figures themselves are make bench's."""

import json
import re
import shlex
import subprocess
import sys

import pytest

from killtest.harness.bench.catalog_scale import kills_at_quarters
from killtest.harness.bench.frontier_cost import frontier_seconds_per_page
from killtest.harness.bench.overhead_run import MAKE_KILLTEST_ARGS
from killtest.harness.design.model import PROJECT_ROOT
from killtest.harness.faults.points.request import AtRequest
from killtest.harness.history import History
from killtest.harness.report.timeline import lease_waits
from killtest.harness.running.phase_clock import PhaseClock, overhead_breakdown


def test_the_overhead_run_is_the_command_make_killtest_runs():
    makefile = open(f"{PROJECT_ROOT}/Makefile", encoding="utf-8").read()
    experiment = shlex.split(re.search(r"^EXPERIMENT := (.*)$", makefile, re.M).group(1))
    # $(MODEL) is empty unless a disk model is asked for (make killtest MODEL=...): the default run has none.
    assert re.search(r"^MODEL \?=\s*$", makefile, re.M)
    experiment = [word for word in experiment if word != "$(MODEL)"]
    # $(CONTROL) is the naive control unless asked otherwise (make killtest CONTROL=naive-page-commit).
    control = re.search(r"^CONTROL \?= *(\S+)\s*$", makefile, re.M).group(1)
    experiment = [control if word == "$(CONTROL)" else word for word in experiment]
    target = re.search(r"^killtest: .*\n\t\$\(BIN\)/killtest \$\(EXPERIMENT\) (.*)$", makefile, re.M).group(1)
    extra = [a for a in shlex.split(target) if a not in ("--out", "results")]
    assert MAKE_KILLTEST_ARGS == experiment + extra


def test_overhead_is_everything_but_the_scrapers_time_split_by_phase():
    campaign = {"runs": [{"scraper_s": 40.0}, {"scraper_s": 50.0}],
                "timing": {"setup_s": 0.5, "runs_s": 91.0, "checks_s": 0.3, "teardown_s": 0.1, "finish_s": 2.0}}
    o = overhead_breakdown(campaign, total_s=95.0)
    assert (o["scraper_s"], o["harness_s"], o["ratio"]) == (90.0, 5.0, round(5 / 95, 4))
    assert o["parts"]["spawn, kill, reap and store reads inside runs"] == 1.0
    assert o["parts"]["interpreter, imports and arguments"] == 1.1
    assert round(sum(o["parts"].values()), 6) == o["harness_s"]  # the parts add up to the whole


def test_a_phase_clock_adds_each_lap_to_its_phase():
    clock = PhaseClock()
    clock.lap("a")
    clock.lap("b")
    clock.lap("a")
    assert set(clock.totals) == {"a", "b"} and all(v >= 0 for v in clock.totals.values())


def test_back_to_back_lease_naps_are_drawn_as_one_stretch():
    history = History()
    for t in (1.0, 1.05, 1.1, 3.0):
        history.add("scraper_event", t, start=0, name="lease_wait", seconds=0.05)
    assert [(round(a, 6), round(b, 6)) for a, b in lease_waits(history)] == [(1.0, 1.15), (3.0, 3.05)]


def test_scaling_kills_fall_at_even_shares_of_the_crawl():
    assert kills_at_quarters(525, 3).points == (AtRequest(131),) * 3
    assert kills_at_quarters(2, 3).points == (AtRequest(1),) * 3


def test_the_frontier_benchmark_runs_the_design_over_the_whole_catalog(tmp_path):
    assert 0 < frontier_seconds_per_page(60, 20, str(tmp_path)) < 1
    assert not list(tmp_path.iterdir())  # its store is removed


@pytest.mark.slow
def test_a_small_scaling_bench_writes_json_markdown_and_a_plot(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "killtest", "bench", "--only", "scale", "--sizes", "40,80",
                           "--scale-kills", "1", "--out", str(out)], capture_output=True, text=True, timeout=120,
                          cwd=PROJECT_ROOT)
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "bench.json").read_text())
    assert [(r["products"], r["rows"], r["correct"], r["lost"]) for r in results["scale"]] == [(40, 40, 40, 0),
                                                                                           (80, 80, 80, 0)]
    assert all(r["ms_per_page"] > 0 and r["site_ceiling_rps"] > 0 for r in results["scale"])
    assert "| 80 |" in (out / "bench.md").read_text()
    assert (out / "bench-scale.png").read_bytes()[:4] == b"\x89PNG"
