"""`killtest fuzz` and killtest.spread's fuzz items on a recorded site: the recording is the catalog.

The shop (2 listing pages of 3 products) is recorded once through the recording proxy, as
tests/test_record_replay.py records it; a design's spec then names that recording, and fuzz draws only
kill schedules, runs every case on the replay, and prints a replay line that names no catalog size.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys

import pytest

pytest.importorskip("warcio", reason="pip install -e '.[record]'")
# The proxy runs from its own env (mitmproxy at exact pins, ~/.cache/killtest/tools/), built once for the session
# by the `recording_proxy_env` fixture: every test and fixture here that starts a proxy asks for it, and the
# pure ones (matching, masking, the scan) do not, so the fast lane builds nothing.

from killtest import fuzz_example, fuzz_examples  # noqa: E402
from killtest.fixture_site.catalog import build_catalog  # noqa: E402
from killtest.fixture_site.server import SiteServer  # noqa: E402
from killtest.harness.campaigns.fuzzing import Case  # noqa: E402
from killtest.harness.campaigns.record_site import record_design  # noqa: E402
from killtest.harness.campaigns.shrink_steps import smaller as _smaller  # noqa: E402
from killtest.harness.design.model import PROJECT_ROOT  # noqa: E402
from killtest.harness.design.specfile import load_spec  # noqa: E402
from killtest.harness.errors import KilltestError  # noqa: E402
from killtest.spread import FuzzExample  # noqa: E402

ZOO_POINT = "l:scrapers/zoo/done_before_record.py:complete+3:2"  # between its two commits: a record is lost


def _with_site(folder: str, base: str, name: str) -> str:
    """A spec that extends `base` and names the recorded shop."""
    path = os.path.join(folder, f"{name}.toml")
    with open(path, "w") as out:
        out.write(f'extends = "{base}"\n[site]\nrecording = "shop.warc.gz"\nstart_url = "http://shop.test"\n')
    return path


@pytest.fixture(scope="module")
def recorded_shop(recording_proxy_env, tmp_path_factory):
    """The shop recorded through the idempotent design; its spec and the zoo's done-before-record, both naming it."""
    folder = str(tmp_path_factory.mktemp("recorded-shop"))
    correct = _with_site(folder, os.path.join(PROJECT_ROOT, "scrapers", "idempotent.toml"), "idempotent")
    catalog = build_catalog(2, 3)
    with SiteServer(catalog) as shop:
        made = record_design(load_spec(correct), [f"shop.test:80=127.0.0.1:{shop.base_url.rsplit(':', 1)[1]}"],
                             False, 60)
    assert made.records == 6 and made.requests == catalog.full_crawl_requests
    broken = _with_site(folder, os.path.join(PROJECT_ROOT, "scrapers", "zoo", "done_before_record.toml"), "zoo")
    return correct, broken


def killtest(*args: str, cwd: str = PROJECT_ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "killtest", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": PROJECT_ROOT})


@pytest.mark.slow
def test_fuzz_on_the_recording_of_a_correct_design_passes_drawing_no_catalog(recorded_shop, tmp_path):
    correct, _ = recorded_shop
    done = killtest("fuzz", "--design", correct, "--examples", "4", "--seed", "1", "--jobs", "1",
                    "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    with open(tmp_path / "fuzz-idempotent.json") as src:
        result = json.load(src)
    assert len(result["trials"]) == 4 and result["failure"] is None and result["replay"] is None
    # No catalog size drawn: every case ran on the recording, and said so.
    assert {(t["case"]["pages"], t["case"]["per_page"]) for t in result["trials"]} == {(0, 0)}
    assert done.stderr.count("catalog recording, schedule") == 4, done.stderr[-3000:]


@pytest.mark.slow
def test_fuzz_on_the_recording_of_a_broken_design_prints_a_replay_line_that_fails_elsewhere(recorded_shop, tmp_path):
    _, broken = recorded_shop
    # Seed 3 draws a commit-path point between the zoo design's two commits among its 4 cases (seed 1 does not).
    done = killtest("fuzz", "--design", broken, "--examples", "4", "--seed", "3", "--jobs", "1",
                    "--out", str(tmp_path / "results"))
    assert done.returncode == 1, done.stderr[-3000:]
    assert "on the recorded site: lost 1 of 6 records" in done.stderr, done.stderr[-3000:]
    with open(tmp_path / "results" / "fuzz-zoo-done-before-record.json") as src:
        result = json.load(src)
    assert result["shrunk"]["exact"] and (result["shrunk"]["case"]["pages"], result["shrunk"]["case"]["per_page"]) \
        == (0, 0)
    # Shrinking kept the recording: every run it made was on it, none on a smaller shop.
    shrink_lines = [line for line in done.stderr.splitlines() if "shrink:" in line]
    assert len(shrink_lines) == result["shrink_runs"] and all("catalog recording," in line for line in shrink_lines)
    line = next(line for line in done.stderr.splitlines() if line.startswith("replay it: "))
    words = shlex.split(line[len("replay it: "):])
    assert words[:2] == ["killtest", "replay"] and result["replay"] == shlex.join(words)
    assert "--listing-pages" not in words and "--per-page" not in words  # replay serves the recording
    assert words[words.index("--design") + 1] == broken  # absolute: it works from any directory
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = killtest(*words[1:], "--out", str(tmp_path / "replay"), cwd=str(elsewhere))
    assert again.returncode == 1, again.stderr[-3000:]
    assert "lost 1" in again.stderr, again.stderr[-3000:]


@pytest.mark.slow
def test_spread_draws_and_runs_fuzz_cases_on_the_recording(recorded_shop, tmp_path):
    correct, broken = recorded_shop
    examples = fuzz_examples(correct, examples=2, seed=1)
    assert len(examples) == 2 and all((e.listing_pages, e.per_page) == (0, 0) for e in examples)
    assert all(str(e).endswith("@recording") for e in examples)
    assert examples == fuzz_examples(correct, examples=2, seed=1)  # every xdist worker collects the same items
    fuzz_example(correct, examples[0], out=tmp_path / "ok", log=io.StringIO()).assert_passed()
    lost = fuzz_example(broken, FuzzExample(ZOO_POINT, 0, 0), out=tmp_path / "lost", log=io.StringIO())
    assert lost.validity == "invalid" and "lost 1 of 6 records" in lost.summary
    assert lost.replay is not None and "--listing-pages" not in lost.replay and broken in lost.replay
    with pytest.raises(KilltestError, match="its catalog is the recording"):
        fuzz_example(correct, FuzzExample("r2", 2, 3), out=tmp_path / "bad", log=io.StringIO())


def test_a_recorded_case_never_shrinks_to_a_smaller_catalog():
    smaller = list(_smaller(Case(0, 0, "r5,w7,r3+")))
    assert smaller and all(case.recorded for case in smaller)
    assert any(not case.recorded for case in _smaller(Case(2, 3, "r5")))  # the shop's do
