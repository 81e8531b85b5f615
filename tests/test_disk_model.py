"""The disk model (harness/faults/disk_model.py): strace delays every flush of a design's processes.

Real processes under a real strace: a delay can only add time, so the tests hold lower bounds (a run
under the model takes at least its flushes times the delay), never timing bands. Skipped where strace
is missing, unless KILLTEST_REQUIRE_SERVERS=1 (CI).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import psutil
import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.harness import defaults
from killtest.harness.design.registry import design_named
from killtest.harness.errors import KilltestError
from killtest.harness.faults.disk_model import PROFILES, DiskModel, counted_flushes, disk_model, under_the_disk_model
from killtest.harness.faults.points import StartOptions, parse_point
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.running.orchestrator import run_phase, stage
from killtest.harness.running.runner import RunSettings

if shutil.which("strace") is None and os.environ.get("KILLTEST_REQUIRE_SERVERS") == "1":
    raise RuntimeError("KILLTEST_REQUIRE_SERVERS=1 but strace is not installed")
needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
FLUSHES = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for _ in range(5):
    os.write(fd, b"x"); os.fdatasync(fd)
os.fsync(fd)
"""


def test_every_profile_is_named_in_the_defaults_and_has_a_source():
    assert tuple(PROFILES) == defaults.DISK_PROFILES
    assert all(model.source and model.fsync_s >= model.fdatasync_s > 0 for model in PROFILES.values())
    assert PROFILES["consumer-ssd"].delays_us()["fdatasync"] == 1643


def test_no_model_means_no_strace_and_bad_input_is_one_line():
    assert disk_model(None, None) is None and disk_model("none", None) is None and disk_model(None, 0) is None
    for profile, latency in (("floppy", None), ("hdd", 0.01)):
        with pytest.raises(KilltestError) as error:
            disk_model(profile, latency)
        assert "\n" not in str(error.value)


@needs_strace
def test_each_flush_costs_the_delay_and_strace_counts_them(tmp_path):
    model = DiskModel("test", 0.05, 0.02, count_file=str(tmp_path / "count.txt"))
    program = tmp_path / "flushes.py"
    program.write_text(FLUSHES)
    began = time.monotonic()
    subprocess.run([*model.strace_prefix(), sys.executable, str(program), str(tmp_path / "data")], check=True)
    assert time.monotonic() - began >= 5 * 0.02 + 0.05  # five fdatasyncs and one fsync, each delayed
    assert counted_flushes(str(tmp_path / "count.txt")) == 6
    assert counted_flushes(str(tmp_path / "missing.txt")) == 0


@needs_strace
def test_a_design_runs_under_the_model_and_pays_for_every_flush(tmp_path):
    design = design_named("idempotent")
    model = DiskModel("fsync-latency=0.01", 0.01, 0.01, count_file=str(tmp_path / "count.txt"))
    with stage(build_catalog(1, 3), [design], disk=model) as on:
        history = run_phase(on, design, parse_schedule("t3600"), RunSettings(time_limit_s=60, disk=model),
                            work_dir=str(tmp_path))
    flushes = counted_flushes(str(tmp_path / "count.txt"))
    assert flushes >= len(history.of_type("request")) >= 4  # at least one commit a page (two, in WAL)
    assert history.first("run_finished")["scraper_s"] >= flushes * 0.01
    assert len(history.of_type("store_record")) == 3


@needs_strace
def test_a_point_with_a_tracer_of_its_own_is_refused_in_one_line_and_a_line_point_keeps_its_line():
    model = DiskModel("hdd", 0.001, 0.001)
    point = parse_point("w5")
    with pytest.raises(KilltestError, match="cannot trace too") as error:
        under_the_disk_model(StartOptions(command_prefix=("strace", "--")), model, point)
    assert "\n" not in str(error.value)
    kept = under_the_disk_model(StartOptions(kill_at_line=("/x.py", 3, 1)), model, point)
    assert kept is not None and kept.kill_at_line == ("/x.py", 3, 1) and kept.command_prefix[0] == "strace"
    assert under_the_disk_model(None, None, None) is None


@pytest.mark.slow
@needs_strace
def test_a_private_postgres_runs_under_the_model_with_fsync_on_and_stops_whole():
    from killtest.harness.servers.common import ServerUnavailable
    from killtest.harness.servers.for_stores import StoreServers

    psycopg = pytest.importorskip("psycopg")
    design = design_named("idempotent-pg")
    try:
        with StoreServers([design], DiskModel("test", 0.001, 0.001).strace_prefix()) as servers:
            server = servers._server_of(design)
            assert server is not None and os.path.basename(server.process.args[0]) == "strace"
            inside = psutil.Process(server.process.pid).children(recursive=True)
            with psycopg.connect(servers.dsn_for(design)) as db:
                assert db.execute("SHOW fsync").fetchone()[0] == "on"  # the model prices commits that happen
    except ServerUnavailable as missing:
        pytest.skip(str(missing))
    assert inside and not [p for p in inside if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@needs_strace
def test_starts_killed_under_the_model_leave_nothing_behind(tmp_path):
    # Under strace the design is strace's child: the harness adopts the orphans a kill makes and reaps them,
    # or a container's init that never reaps would keep the killed group alive as zombies. Killed at its 3rd
    # request, not at a time: on a quiet machine the whole crawl took 0.36 s, before a t0.4 kill.
    design = design_named("naive")
    model = DiskModel("test", 0.002, 0.002)
    with stage(build_catalog(2, 10), [design], disk=model) as on:
        history = run_phase(on, design, parse_schedule("r3,r3,r3"), RunSettings(time_limit_s=60, disk=model),
                            work_dir=str(tmp_path))
    assert history.first("run_finished")["outcome"] == "completed" and len(history.of_type("kill")) == 3
    pids = [pid for start in history.of_type("process_started") for pid in start["pids"]]
    assert not [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
    assert not [child for child in psutil.Process().children(recursive=True)
                if child.status() == psutil.STATUS_ZOMBIE]
