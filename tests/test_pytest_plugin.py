"""The pytest plugin (killtest/pytest_plugin.py), through pytest itself: each test runs a user's test
files in a fresh pytest process (pytester), where the plugin loads by its `pytest11` entry point."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from killtest.harness import defaults
from killtest.pytest_plugin import DEFAULT_SEED

pytest_plugins = ["pytester"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZOO_LINE = "l:scrapers/zoo/done_before_record.py:complete+3:2"


def test_the_option_group_is_in_help(pytester):
    result = pytester.runpytest_subprocess("--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["killtest: SIGKILL scrapers for real*", "*--killtest-seed=N*",
                                 "*--killtest-examples=N*", "*--killtest-max-seconds=SECONDS*",
                                 "*--killtest-out=DIR*"])
    result.stdout.fnmatch_lines(["*killtest_seed (string):*", "*killtest_out (string):*"])


@pytest.mark.slow
def test_the_seed_is_in_the_header_from_the_option_or_the_ini(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    assert DEFAULT_SEED == defaults.SEED  # the plugin writes the default out so as not to import Flask
    pytester.runpytest_subprocess().stdout.fnmatch_lines([f"killtest: seed {defaults.SEED}, results in pytest's*"])
    pytester.makeini("[pytest]\nkilltest_seed = 5\n")
    pytester.runpytest_subprocess().stdout.fnmatch_lines(["killtest: seed 5, *"])
    out = pytester.path / "kept"
    pytester.runpytest_subprocess("--killtest-seed", "7", "--killtest-out", str(out)).stdout.fnmatch_lines(
        [f"killtest: seed 7, results in {out}"])


def test_a_test_that_does_not_use_it_loads_nothing_of_the_harness(pytester):
    pytester.makepyfile("""
        import sys

        def test_untouched(request):
            assert request.config.pluginmanager.has_plugin("killtest")
            assert [m for m in sys.modules if m.startswith(("killtest.harness", "flask"))] == []
    """)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.slow
@pytest.mark.serial  # timing-sensitive: failed under load (make test runs it after the rest, beside one other at most)
def test_the_users_example_project_passes_as_written(pytester):
    """examples/user-project (its own `scrapers` package, spec and test) copied out and run, so the docs cannot rot."""
    shutil.copytree(os.path.join(ROOT, "examples", "user-project"), pytester.path, dirs_exist_ok=True)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--killtest-out", "kept")
    result.assert_outcomes(passed=1)
    kept = pytester.path / "kept"
    written = sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*.json") if "history" not in p.parts)
    assert [p.split("/", 1)[1] for p in written] == ["1-run/killtest.json", "2-explore/explore-my-shop-scraper.json"]


@pytest.mark.slow
def test_a_broken_design_fails_with_its_findings_and_a_replay_line_that_reproduces_it(pytester, tmp_path):
    pytester.makepyfile(f"""
        def test_zoo(killtest):
            result = killtest.explore("zoo-done-before-record", only="r3,{ZOO_LINE}", jobs=1)
            assert result.findings and result.findings[0].promise == "no_lost_records"
            result.assert_passed()
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*KilltestFailed: killtest explore zoo-done-before-record: 2 crash points,"
                                 " 1 broken — invalid*",
                                 "*- killtest -*",
                                 "*1 distinct failure:",  # one per bug, at the program's own line (issue 35)
                                 "failure 1: at scrapers/zoo/done_before_record.py:*: lost 1 of 6 records*"
                                 " (broke no_lost_records)",
                                 "  1 covered: l:scrapers/zoo/done_before_record.py:complete+3:2",
                                 "*>*|*"])  # the line's own text, marked
    section = out[out.index("- killtest -"):]
    replay = re.search(r"^  replay: (killtest replay .*)$", section, re.MULTILINE)
    assert replay is not None, section
    words = shlex.split(replay.group(1))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-m", "killtest", *words[1:]], cwd=elsewhere, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "lost 1 of 6 records" in done.stderr


@pytest.mark.slow
def test_the_marker_states_what_the_spec_promises(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.killtest(does_not_promise=[])
        def test_agrees(killtest):
            killtest.explore("idempotent", only="r3", jobs=1).assert_passed()

        @pytest.mark.killtest(does_not_promise=["bounded_requests"])
        def test_disagrees(killtest):
            killtest.explore("idempotent", only="r3", jobs=1)

        @pytest.mark.killtest(promises=["no_lost_records", "fast"])
        def test_unknown_promise(killtest):
            killtest.run("idempotent")

        def test_bad_input_is_one_line(killtest):
            killtest.run("no-such-design")
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines([
        "*idempotent.toml: the spec waives nothing, but this test's @pytest.mark.killtest(does_not_promise=...)"
        " says it waives ?'bounded_requests'?: make them agree",
        "*@pytest.mark.killtest(promises=...): 'fast' is not a promise a spec can waive; they are *",
        "*killtest: unknown design 'no-such-design'*"])
    assert "Traceback" not in result.stdout.str()
    pytester.runpytest_subprocess("--markers").stdout.fnmatch_lines(["@pytest.mark.killtest(promises=None, *"])
