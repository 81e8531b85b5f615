"""Power-cut points (`x0.4`, `xr5`, `xw5`): a real run under the power-loss file system, cut at a store write.

The designs run for real against the shop, under a real FUSE mount over the run's work dir; the point
SIGKILLs the start, the mount forgets what no fsync made durable, and the next start runs on what
survived. tests/scraper_fixtures/sync_off.py (a durable frontier, records with synchronous=OFF) loses
the records whose pages its frontier already marked done; the idempotent design (WAL, synchronous
FULL) keeps every one. Skipped where FUSE is missing, unless KILLTEST_REQUIRE_SERVERS=1 (CI).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness.check.checker import check_run
from killtest.harness.design.registry import design_named
from killtest.harness.design.specfile import load_spec
from killtest.harness.errors import KilltestError
from killtest.harness.faults import power_loss
from killtest.harness.faults.points import parse_point
from killtest.harness.faults.points.power_cut import PowerCutAfterDelay, PowerCutAtRequest, PowerCutAtStoreWrite
from killtest.harness.faults.points.request import AtRequest
from killtest.harness.faults.points.store_write import AtStoreWrite
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.running.orchestrator import Stage
from killtest.harness.running.runner import RunSettings, run_kill_test
from killtest.harness.running.write_plans import resolve_schedule, store_write_points
from killtest.harness.servers.for_stores import StoreServers

REASON = power_loss.unavailable_reason() or (None if shutil.which("strace") else "strace is not installed")
if REASON is not None and os.environ.get("KILLTEST_REQUIRE_SERVERS") == "1":
    raise RuntimeError(f"KILLTEST_REQUIRE_SERVERS=1 but a power cut cannot run here: {REASON}")
needs_fuse = pytest.mark.skipif(REASON is not None, reason=f"power-cut points unavailable: {REASON}")

SYNC_OFF = os.path.join(os.path.dirname(__file__), "scraper_fixtures", "sync_off.toml")
SETTINGS = RunSettings(lease_s=0.2, time_limit_s=60)
CATALOG = build_catalog(listing_pages=2, products_per_page=3)


@pytest.mark.parametrize("text, point, plain", [
    ("x0.4", PowerCutAfterDelay(0.4), "t0.4"),
    ("xr5", PowerCutAtRequest(5), "r5"),
    ("xr5+", PowerCutAtRequest(5, after_response=True), "r5+"),
    ("xw5", PowerCutAtStoreWrite(5), "w5"),
])
def test_a_power_cut_point_parses_prints_back_and_is_its_triggers_kind(text, point, plain):
    parsed = parse_point(text)
    assert parsed == point and parsed.spec == text and parse_point(parsed.spec) == parsed
    kill = parse_point(plain)  # the same trigger, a plain SIGKILL
    assert isinstance(parsed, type(kill)) and parsed != kill
    assert parsed.needs_power_loss_mount and not kill.needs_power_loss_mount
    assert parse_schedule(f"t0.2,{text},r3").points[1] == point


@pytest.mark.parametrize("text", ["xr5+", "xw5"])
def test_the_recording_that_aims_a_write_keeps_the_power_cut(text):
    aimed = dataclasses.replace(parse_point(text), resolved=True)  # as harness/running/write_plans.py aims it
    assert aimed.spec == text and aimed.needs_power_loss_mount and isinstance(aimed, (AtRequest, AtStoreWrite))


@pytest.mark.parametrize("text", ["x0.4@2", "xw7:c2", "x0", "xw0", "xq3", "x"])
def test_a_malformed_power_cut_point_is_the_one_line_error_listing_every_form(text):
    with pytest.raises(KilltestError, match="bad kill point") as error:
        parse_point(text)
    assert "x<seconds>, xr<request number>[+], xw<store write number>" in str(error.value)
    assert "\n" not in str(error.value)


def test_a_power_cut_is_refused_in_one_line_for_a_servers_store_or_a_store_outside_the_work_dir(tmp_path):
    if power_loss.unavailable_reason() is not None:
        pytest.skip(f"the FUSE refusal comes first here: {power_loss.unavailable_reason()}")
    with pytest.raises(KilltestError, match="keeps its records in a postgres server's own directory") as error:
        parse_point("x0.4").validate([design_named("idempotent-pg")], 1)
    assert "\n" not in str(error.value)
    spec = tmp_path / "elsewhere.toml"
    spec.write_text(open(SYNC_OFF).read().replace('"{work_dir}/records.sqlite"', '"{spec_dir}/records.sqlite"'))
    with pytest.raises(KilltestError, match="keeps its store outside it .*put store.path under") as error:
        parse_point("xr5").validate([load_spec(str(spec))], 1)
    parse_point("xr5").validate([load_spec(SYNC_OFF), design_named("idempotent")], 1)


def test_without_fuse_a_power_cut_point_is_refused_in_one_line_naming_why(monkeypatch):
    monkeypatch.setattr(power_loss.shutil, "which", lambda name: None)
    with pytest.raises(KilltestError, match="kill point xr5 cuts the power through a FUSE file system over the"
                                            " work dir, which cannot run here: fusermount3 is not installed") as e:
        parse_point("xr5").validate([design_named("idempotent")], 1)
    assert "\n" not in str(e.value)


def cut(design, schedule_text, site, recordings=None):
    """One run of an aimed power-cut schedule: its kills, its power cuts, its records, its verdict, its history.
    `recordings` keeps the first start's strace recording from one point to the next."""
    with StoreServers([design]) as servers:
        schedule = resolve_schedule(parse_schedule(schedule_text, design), design, Stage(site, servers, {}),
                                    SETTINGS, cache=recordings)
        with tempfile.TemporaryDirectory(prefix="killtest-test-") as parent:
            work_dir = os.path.join(parent, "work")
            os.mkdir(work_dir)
            history = run_kill_test(design, schedule, site, work_dir, SETTINGS)
            assert not os.path.ismount(work_dir)  # the mount was left before the store was read
            assert os.listdir(parent) == ["work"]  # and its backing directory is gone
    records = sorted((r["key"], sorted(r["fields"].items())) for r in history.of_type("store_record"))
    kills = [k["returncode"] for k in history.of_type("kill")]
    return kills, history.of_type("power_lost"), records, check_run(design, 1, history, site.catalog), history


def story(history) -> list[str]:
    """A run, as much of it as explains a verdict: starts, kills, power cuts, every request,
    every record's stamp (a failure in CI says what happened, not only that it did)."""
    kinds = ("process_started", "kill", "power_lost", "request", "store_record", "process_exited")
    return [f"{e['type']} t={e['t']:.4f} start={e.get('start')} {e.get('path') or e.get('key') or e.get('point') or ''}"
            for e in history.events if e["type"] in kinds]


def write_points(design, site, recordings):
    """`w1`..`wN` of the design's first start, as strace can aim at them, turned into power cuts."""
    with StoreServers([design]) as servers:
        return ["x" + p.spec for p in store_write_points(design, Stage(site, servers, {}), SETTINGS,
                                                         cache=recordings)]


@pytest.mark.slow
@needs_fuse
def test_a_power_cut_at_a_store_write_loses_the_records_synchronous_off_never_made_durable():
    design, recordings = load_spec(SYNC_OFF), {}
    with SiteServer(CATALOG) as site:
        points = write_points(design, site, recordings)
        assert len(points) > 20, points
        # Past the middle of the first start most products are committed and their pages marked done.
        late = [points[len(points) // 2], points[2 * len(points) // 3], points[-2]]
        outcomes = {point: cut(design, point, site, recordings) for point in late}
        lost = {point: o for point, o in outcomes.items() if o[3].missing_records}
        assert list(lost) == late, {point: o[3].problems for point, o in outcomes.items()}
        for point, (kills, cuts, _, verdict, _) in lost.items():
            assert kills == [-9] and len(cuts) == 1 and cuts[0]["point"] == point
            assert "records.sqlite" in cuts[0]["bytes_reverted"] + cuts[0]["names_lost"]
            assert cuts[0]["bytes"] > 0 and verdict.validity == "invalid"
            assert any("lost" in problem for problem in verdict.problems), verdict.problems
        # A SIGKILL at the same write loses nothing: only the power cut shows the missing fsync.
        point = late[-1]
        kills, cuts, _, verdict, _ = cut(design, point[1:], site, recordings)
        assert kills == [-9] and cuts == [] and verdict.validity == "valid", verdict.problems
        # The same point twice: the same kill, the same files lost, the same records.
        again = cut(design, point, site, recordings)
        assert again[0] == lost[point][0] and again[2] == lost[point][2]
        assert {k: v for k, v in again[1][0].items() if k != "t"} == \
            {k: v for k, v in lost[point][1][0].items() if k != "t"}


@pytest.mark.slow
@needs_fuse
def test_the_idempotent_design_keeps_every_record_through_power_cuts_at_its_store_writes():
    design, recordings = design_named("idempotent"), {}
    with SiteServer(CATALOG) as site:
        points = write_points(design, site, recordings)
        for point in (points[len(points) // 3], points[len(points) // 2], points[-2]):
            outcomes = [cut(design, point, site, recordings) for _ in range(2)]
            kills, cuts, records, verdict, history = outcomes[0]
            assert kills == [-9] and len(cuts) == 1, point
            assert verdict.validity == "valid" and verdict.missing_records == 0, \
                (point, verdict.problems, story(history))
            assert outcomes[1][2] == records and outcomes[1][3].validity == "valid", (point, story(outcomes[1][4]))


def killtest(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "killtest", *args, "--listing-pages", "2", "--per-page", "3",
                           "--lease", "0.2"], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@needs_fuse
def test_killtest_run_takes_a_power_cut_schedule_and_prints_a_replay_line_that_cuts_it_again(tmp_path):
    done = killtest("run", "--design", SYNC_OFF, "--schedule", "xr6", "--runs", "1", "--no-plot",
                    "--out", str(tmp_path / "run"))
    assert done.returncode == 1 and "lost 3 of 6 records" in done.stderr, done.stderr[-2000:]
    replay = next(line for line in done.stderr.splitlines() if line.startswith("replay "))
    assert "--schedule xr6 " in replay
    again = killtest("replay", "--design", SYNC_OFF, "--schedule", "xr6", "--out", str(tmp_path / "replay"))
    assert again.returncode == 1 and "lost 3 of 6 records" in again.stderr, again.stderr[-2000:]
    assert "Traceback" not in done.stderr + again.stderr
