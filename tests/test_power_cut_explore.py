"""`killtest explore --power-cut` and `killtest fuzz --power-cut`: power-cut points drawn by the commands.

Real runs against the shop under a real FUSE mount (harness/faults/power_loss.py). Explore adds, after
each store write `w<n>` of a file store, its power-cut twin `xw<n>`; tests/scraper_fixtures/sync_off.py
(records with synchronous=OFF) survives SIGKILLs at its writes but loses records when the power goes at
some, the idempotent design (WAL, synchronous FULL) at none. Fuzz draws x, xr and xw points too, the
same ones for the same seed, and its shrunk replay line keeps the power cut. A design a power cut
cannot apply to is refused in one line before any run. Skipped where FUSE or strace is missing, unless
KILLTEST_REQUIRE_SERVERS=1 (CI).
"""

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

import killtest
from killtest import crash_points, fuzz_examples
from killtest.harness.campaigns.shrink_steps import _lower, _renumbered
from killtest.harness.design.model import PROJECT_ROOT
from killtest.harness.errors import KilltestError
from killtest.harness.faults import power_loss

REASON = power_loss.unavailable_reason() or (None if shutil.which("strace") else "strace is not installed")
if REASON is not None and os.environ.get("KILLTEST_REQUIRE_SERVERS") == "1":
    raise RuntimeError(f"KILLTEST_REQUIRE_SERVERS=1 but a power cut cannot run here: {REASON}")
needs_fuse = pytest.mark.skipif(REASON is not None, reason=f"power-cut points unavailable: {REASON}")

SYNC_OFF = os.path.join(os.path.dirname(__file__), "scraper_fixtures", "sync_off.toml")
TINY = {"listing_pages": 1, "per_page": 2}


def killtest_cli(*args: str, cwd: str = PROJECT_ROOT) -> subprocess.CompletedProcess:
    """`killtest ARGS` from `cwd`, as the installed command runs it."""
    return subprocess.run([sys.executable, "-m", "killtest", *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": PROJECT_ROOT})


@pytest.mark.slow
def test_a_power_cut_is_refused_in_one_line_before_any_run_for_a_servers_store(tmp_path):
    for command in ("explore", "fuzz"):
        done = killtest_cli(command, "--design", "idempotent-pg", "--power-cut", "--out", str(tmp_path / "out"))
        assert done.returncode == 2, done.stderr[-2000:]
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"killtest: error: {command} --power-cut: "), lines
        if REASON is None:  # else the missing FUSE is named first, as it should be
            assert "postgres server's own directory" in lines[0]
        assert not (tmp_path / "out").exists()  # refused before anything was set up
    with pytest.raises(KilltestError, match="--power-cut"):
        killtest.explore("idempotent-pg", power_cut=True, out=tmp_path, log=io.StringIO())


@needs_fuse
def test_a_store_outside_the_work_dir_is_refused_by_the_api_in_one_line(tmp_path):
    spec = tmp_path / "outside.toml"
    spec.write_text(open(SYNC_OFF).read().replace('"{work_dir}/records.sqlite"', '"{spec_dir}/records.sqlite"')
                    .replace("{spec_dir}/sync_off.py", os.path.join(os.path.dirname(SYNC_OFF), "sync_off.py")))
    with pytest.raises(KilltestError, match="explore --power-cut: .*outside it") as error:
        crash_points(str(spec), power_cut=True, **TINY)
    assert "\n" not in str(error.value)
    with pytest.raises(KilltestError, match="fuzz --power-cut: .*outside it"):
        fuzz_examples(str(spec), examples=2, seed=1, power_cut=True)


@pytest.mark.slow
@needs_fuse
def test_explore_power_cut_finds_xw_points_that_lose_records_where_the_plain_write_does_not(tmp_path):
    # Every sixth of the later half of the store writes, where the records are written (the earlier ones make
    # the schema): --only with --power-cut adds each one's twin. Of the 84 writes here, the cut loses records
    # from w60 on, the plain kill never: w43..w79 every 6th holds 4 such writes and 3 where the cut loses
    # nothing either (all 42: 67 s; every 3rd: the same verdicts from twice the runs).
    writes = [p for p in crash_points(SYNC_OFF, **TINY) if p.startswith("w")]
    later = writes[len(writes) // 2::6]
    done = killtest_cli("explore", "--design", SYNC_OFF, "--power-cut", "--listing-pages", "1", "--per-page", "2",
                        "--only", ",".join(later), "-j", "2", "--out", str(tmp_path))
    assert done.returncode == 1, done.stderr[-2000:]  # the fixture claims idempotence: a broken point fails it
    outcomes = {o["point"]: o for o in json.load(open(tmp_path / "explore-sync-off.json"))["outcomes"]}
    writes = [p for p in outcomes if p.startswith("w")]
    assert writes == later and all(outcomes.get("x" + w) for w in writes)  # every store write has its twin
    assert set(outcomes) == set(writes) | {"x" + w for w in writes}
    only_cut = [w for w in writes if outcomes[w]["valid"] and not outcomes["x" + w]["valid"]]
    assert only_cut, done.stderr[-3000:]
    assert all(any("lost" in problem for problem in outcomes["x" + w]["problems"]) for w in only_cut)


@pytest.mark.slow
@needs_fuse
def test_the_idempotent_design_loses_nothing_at_any_power_cut_and_the_flag_only_adds_twins(tmp_path):
    plain = crash_points("idempotent", **TINY)
    with_cuts = crash_points("idempotent", power_cut=True, **TINY)
    assert not any(p.startswith("x") for p in plain)
    cuts = [p for p in with_cuts if p.startswith("x")]
    assert cuts and all(p.startswith("xw") for p in cuts)
    assert [p for p in with_cuts if not p.startswith("x")] == plain  # same points, same order, twins added
    sample = cuts[::4]  # every fourth, early and late writes alike: the whole set takes about a minute
    # One job: jobs=2 in this process would leave multiprocessing's resource tracker as a child for the
    # rest of the session, and other tests count this process's children.
    result = killtest.explore("idempotent", only=",".join(sample), jobs=1, out=tmp_path, log=io.StringIO(), **TINY)
    assert result.passed, result.report()
    assert [o["point"] for o in result.data["outcomes"]] == sample and any(o["landed"] for o in result.data["outcomes"])


@pytest.mark.slow
@needs_fuse
def test_fuzz_power_cut_draws_the_same_power_cuts_for_the_same_seed():
    # Seed 10's three cases (each catalog drawn is one recording per call) hold points at recorded writes, a
    # power cut's and a kill's (xw46,aw89 on 2x1 here), and a power cut at a request: each call's own
    # recordings must give the same draws. Without the flag: w and r points, no x.
    drawn = fuzz_examples(SYNC_OFF, examples=3, seed=10, power_cut=True)
    assert drawn == fuzz_examples(SYNC_OFF, examples=3, seed=10, power_cut=True)  # every xdist worker agrees
    assert any(point.startswith("x") for example in drawn for point in example.schedule.split(","))
    plain = fuzz_examples(SYNC_OFF, examples=3, seed=10)
    assert not any(point.startswith("x") for example in plain for point in example.schedule.split(","))


def test_shrinking_lowers_and_moves_a_power_cut_point_as_its_trigger_and_keeps_the_cut():
    assert _lower("xw45") == ["xw22", "xw44"] and _lower("xr5+") == ["xr2+", "xr4+"]
    assert _lower("w45") == ["w22", "w44"] and _lower("x0.05") == [] and _lower("w3:c2") == []
    assert _renumbered("xw40", 0.5, 1) == "xw21" and _renumbered("xr4+", 0.5, 1) == "xr2+"
    assert _renumbered("x0.05", 0.5, 1) == "x0.05"


@pytest.mark.slow
@needs_fuse
def test_fuzz_power_cut_shrinks_to_a_power_cut_whose_replay_line_fails_again_from_elsewhere(tmp_path):
    relative = os.path.relpath(SYNC_OFF, PROJECT_ROOT)
    # Two searches (seeds 30 and 31, two cases each, the first a plain r1 on 1x1) find a power cut at a request
    # each (xr3 on 2x2, xr5+ on 3x1): exact, so its replay repeats; xr3 shrinks in 5 runs, on small catalogs.
    done = killtest_cli("fuzz", "--design", relative, "--power-cut", "--examples", "4", "--seed", "30", "-j", "2",
                        "--out", str(tmp_path / "results"))
    assert done.returncode == 1, done.stderr[-2000:]
    line = next((line for line in done.stderr.splitlines() if "killtest replay" in line), done.stderr[-2000:])
    words = shlex.split(line[line.index("killtest replay"):])[1:]
    schedule = words[words.index("--schedule") + 1]
    assert any(point.startswith("x") for point in schedule.split(",")), line
    assert SYNC_OFF in words  # the spec by its absolute path
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = killtest_cli(*words, "--out", str(tmp_path / "replay"), cwd=str(elsewhere))
    assert again.returncode == 1, again.stderr[-2000:]
    assert "lost" in again.stderr
