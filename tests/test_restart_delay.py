"""--restart-delay (issue 43): a supervisor's wait between a kill and the next start, fixed or backing off.

The waits are lower bounds (a start never comes sooner than its delay after the kill), the back-off's sequence
is a pure function, a replay line carries the delay only when it is not the default and parses back, and a
crawler that waits out on restart what its dead start held recovers only after a delay at least that long.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness import defaults
from killtest.harness.check.checker import check_run
from killtest.harness.cli import build_parser
from killtest.harness.cli.explore import replay_line
from killtest.harness.cli.plans_from_args import run_settings
from killtest.harness.design.model import PROJECT_ROOT, Design, StoreSpec
from killtest.harness.design.registry import design_named
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.option_kinds import RestartDelay, parse_restart_delay
from killtest.harness.options import replay_words
from killtest.harness.running.restart_wait import RestartWait, backoff_restart
from killtest.harness.running.runner import RunSettings, run_kill_test

LOCK_CRAWLER = os.path.join(os.path.dirname(__file__), "scraper_fixtures", "lock_on_restart.py")


def lock_crawler(lock_timeout_s: float) -> Design:
    """tests/scraper_fixtures/lock_on_restart.py: a restart waits out its dead predecessor's lock."""
    return Design(name="lock-on-restart", store=StoreSpec(kind="jsonl", path="{work_dir}/records.jsonl"),
                  command_template=(sys.executable, LOCK_CRAWLER, "--base", "{base_url}", "--out",
                                    "{work_dir}/records.jsonl", "--lock-timeout", f"{lock_timeout_s:g}"))


def gaps_after_kills(history) -> list[tuple[float, dict]]:
    """(the next start's process_started minus the kill, its restart_delayed) for every whole start killed."""
    started = {e["start"]: e["t"] for e in history.of_type("process_started")}
    delayed = {e["start"]: e for e in history.of_type("restart_delayed")}
    return [(started[kill["start"] + 1] - kill["t"], delayed.get(kill["start"] + 1))
            for kill in history.of_type("kill") if kill.get("worker") is None and kill["start"] + 1 in started]


# --- The back-off, as pure functions.

def test_kubernetes_backoff_doubles_from_ten_seconds_and_is_capped_at_five_minutes():
    backoff = parse_restart_delay("backoff")
    assert backoff == RestartDelay(10.0, 300.0)
    assert [backoff.seconds(n) for n in range(1, 10)] == [10, 20, 40, 80, 160, 300, 300, 300, 300]
    assert backoff.seconds(10_000) == 300  # no overflow, however many restarts
    assert [parse_restart_delay("backoff:0.5:3").seconds(n) for n in range(1, 6)] == [0.5, 1, 2, 3, 3]
    assert [parse_restart_delay("12").seconds(n) for n in range(1, 4)] == [12, 12, 12]  # systemd's RestartSec=


def test_the_backoff_starts_over_after_a_start_that_ran_ten_minutes():
    reset = defaults.RESTART_BACKOFF_RESET_S
    assert reset == 600
    wait = RestartWait(parse_restart_delay("backoff"))
    numbers = []
    for ran_s in (1.0, 5.0, 30.0, reset, 2.0, reset - 1):
        wait.killed(ran_s)
        numbers.append(wait.restart)
    assert numbers == [1, 2, 3, 1, 2, 3]
    assert backoff_restart(RestartDelay(10, 300), 7, reset + 1) == 1


def test_the_default_restarts_at_once_and_is_false():
    assert not RestartDelay() and str(RestartDelay()) == "0" and defaults.RESTART_DELAY_S == 0
    args = build_parser().parse_args(["run", "--design", "idempotent"])
    assert args.restart_delay == RestartDelay() and run_settings(args, 3.0).restart_delay == RestartDelay()


@pytest.mark.parametrize("text", ["0", "12", "0.25", "1234567.5", "backoff", "backoff:10:300", "backoff:0.5:3"])
def test_each_form_reads_back_from_its_own_text(text):
    delay = parse_restart_delay(text)
    assert parse_restart_delay(str(delay)) == delay


# --- Replay lines.

@pytest.mark.parametrize("command", ["explore", "fuzz", "run"])
def test_a_replay_line_carries_the_delay_only_when_it_is_not_the_default(command):
    design = design_named("idempotent")
    plain = build_parser().parse_args([command, "--design", "idempotent"])
    assert "--restart-delay" not in replay_line(plain, design, "r3", given="idempotent")
    given = build_parser().parse_args([command, "--design", "idempotent", "--restart-delay", "backoff:2:8"])
    line = replay_line(given, design, "r3", given="idempotent")
    assert "--restart-delay backoff:2:8" in line
    replayed = build_parser().parse_args(shlex.split(line)[1:])
    assert replayed.command == "replay" and replayed.restart_delay == RestartDelay(2.0, 8.0)
    assert run_settings(replayed, replayed.lease).restart_delay == RestartDelay(2.0, 8.0)


def test_replay_words_leave_out_a_zero_delay_but_not_a_zero_seed():
    assert replay_words({"schedule": "r3", "restart_delay": RestartDelay(0.0)}) == ["--schedule", "r3"]
    assert replay_words({"restart_delay": RestartDelay(12.0), "toxic_seed": 0}) == [
        "--restart-delay", "12", "--toxic-seed", "0"]


# --- Bad values: one line, exit 2.

@pytest.mark.parametrize("command,text", [("run", "-1"), ("replay", "soon"), ("explore", "backoff:5"),
                                          ("fuzz", "backoff:10:5"), ("run", "inf")])
def test_a_bad_restart_delay_is_one_line_and_exit_2(command, text):
    words = ["--design", "idempotent", *(["--schedule", "r3"] if command == "replay" else [])]
    done = subprocess.run([sys.executable, "-m", "killtest", command, *words, "--restart-delay", text],
                          capture_output=True, text=True, timeout=60, cwd=PROJECT_ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "killtest: error: argument --restart-delay: expected seconds (12), backoff (10s doubling, capped at 300s) or"
        f" backoff:BASE:CAP with 0 < BASE <= CAP (for example backoff:5:60), not {text!r}"
        f" (see 'killtest {command} --help')"]


# --- Runs: real processes, the waits as lower bounds.

@pytest.mark.serial  # an 8 s limit for four starts: make test's starved background once took longer
def test_each_start_after_a_kill_comes_its_delay_later_and_the_waits_do_not_count_against_the_time_limit(tmp_path):
    """Back-off 3 s then 6 s: 15 s of waiting, far past an 8 s time limit the crawl's four starts stay well inside
    even on a slowed machine (a 3.5 s limit against 6 s of waits timed out in a fresh-clone CI: four interpreter
    starts under load took longer than the limit, waits aside)."""
    catalog = build_catalog(listing_pages=2, products_per_page=3, seed=1)
    delay = parse_restart_delay("backoff:3:6")
    with SiteServer(catalog) as site:
        history = run_kill_test(design_named("idempotent"), parse_schedule("r2,r2,r2"), site, str(tmp_path),
                                RunSettings(lease_s=0.2, time_limit_s=8, restart_delay=delay))
    verdict = check_run(design_named("idempotent"), 1, history, catalog)
    assert history.first("run_started")["restart_delay"] == "backoff:3:6"
    gaps = gaps_after_kills(history)
    assert [(event["restart"], event["seconds"]) for _, event in gaps] == [(1, 3.0), (2, 6.0), (3, 6.0)]
    for gap, event in gaps:
        assert gap >= event["seconds"] and event["waited_s"] >= event["seconds"]
    # Only after a kill: never before the first start, and the last start, which ran to its end, has none after.
    assert len(history.of_type("restart_delayed")) == len(history.of_type("kill")) == 3
    assert min(e["t"] for e in history.of_type("restart_delayed")) > history.first("kill")["t"]
    assert verdict.outcome == "completed" and verdict.missing_records == 0, verdict.problems


def test_a_pause_is_not_a_kill_and_no_restart_waits_for_it(tmp_path):
    """A paused start goes on (SIGSTOP, SIGCONT): only the kill after it makes the next start wait."""
    catalog = build_catalog(listing_pages=2, products_per_page=3, seed=1)
    with SiteServer(catalog, latency_s=0.3) as site:  # a crawl of 8 requests takes 2.4 s: the pause lands in it
        history = run_kill_test(design_named("idempotent"), parse_schedule("p0.2:0.2,r6"), site, str(tmp_path),
                                RunSettings(lease_s=0.2, restart_delay=RestartDelay(0.5)))
    assert history.of_type("paused") and len(history.of_type("kill")) == 1
    [(gap, event)] = gaps_after_kills(history)
    assert event is not None and gap >= 0.5
    assert history.of_type("restart_delayed") == [event]


def test_a_crawler_that_waits_out_its_dead_starts_lock_recovers_only_after_a_delay_that_long(tmp_path):
    """The lock's timeout is 1.5 s: restarted 1.5 s after the kill, the next start finds it expired and crawls."""
    catalog = build_catalog(listing_pages=2, products_per_page=3, seed=1)
    design = lock_crawler(1.5)
    with SiteServer(catalog) as site:
        history = run_kill_test(design, parse_schedule("r2"), site, str(tmp_path),
                                RunSettings(time_limit_s=60, restart_delay=RestartDelay(1.5)))
    verdict = check_run(design, 1, history, catalog)
    [(gap, event)] = gaps_after_kills(history)
    assert gap >= 1.5 and event["seconds"] == 1.5
    assert verdict.outcome == "completed" and verdict.missing_records == 0, verdict.problems
    said = [line for e in history.of_type("start_output") for line in e["stderr_tail"]]
    assert not any("waiting" in line for line in said), said


def test_a_liveness_finding_names_the_delay_and_quotes_what_the_crawler_said_while_it_waited(tmp_path):
    """A 30 s lock, a 1 s restart delay, a 15 s time limit: the next start waits out the lock and is stopped. The
    limit leaves a starved machine time to reach the kill and the next start's words; the lock still outlasts it."""
    catalog = build_catalog(listing_pages=2, products_per_page=3, seed=1)
    design = lock_crawler(30)
    with SiteServer(catalog) as site:
        history = run_kill_test(design, parse_schedule("r1"), site, str(tmp_path),
                                RunSettings(time_limit_s=15, restart_delay=RestartDelay(1.0)))
    verdict = check_run(design, 1, history, catalog)
    assert verdict.outcome == "timed_out"
    [liveness] = [p for p in verdict.problems if p.startswith("liveness")]
    assert "the starts after a kill began 1s after it (--restart-delay 1, not counted against the time limit)" \
        in liveness
    assert "start 2 said, while it waited: `stderr: the lock was taken" in liveness
    assert "for it to expire`" in liveness


# --- explore and fuzz (and the API, which parses the same options) pass it through to every run.

def lock_crawler_spec(tmp_path, lock_timeout_s: float) -> str:
    spec = tmp_path / "lock.toml"
    spec.write_text(f'[design]\nname = "lock-on-restart"\ndoes_not_promise = ["bounded_requests"]\n'
                    f'command = ["{sys.executable}", "{LOCK_CRAWLER}", "--base", "{{base_url}}", "--out", "{{store}}",'
                    f' "--lock-timeout", "{lock_timeout_s:g}"]\n'
                    '[store]\nkind = "jsonl"\npath = "{work_dir}/records.jsonl"\nkey = "sku"\nfields = ["price"]\n')
    return str(spec)


def test_explore_runs_its_points_with_the_delay_and_its_replay_line_carries_it(tmp_path):
    """A 30 s lock: killed at its first request and restarted 1 s later, the next start waits it out past the time
    limit; the broken point's finding names the delay, and its replay line repeats it."""
    import killtest

    spec = lock_crawler_spec(tmp_path, 30)
    # One job: jobs=2 in this process would leave multiprocessing's resource tracker as its child, which the
    # runner's tests, later on the same xdist worker, find left behind.
    # A 15 s limit (the lock, 30 s, outlasts it): 4 s was too short for a starved machine to reach r1.
    result = killtest.explore(spec, only="r1", restart_delay=1, time_limit=15, listing_pages=2, per_page=3, jobs=1,
                              no_prefork=True, out=tmp_path / "out", log=open(os.devnull, "w"))
    assert not result.passed
    assert any("(--restart-delay 1, not counted against the time limit)" in f.message for f in result.findings)
    assert result.replay is not None
    words = shlex.split(result.replay)
    assert words[words.index("--restart-delay") + 1] == "1"


def test_a_bad_restart_delay_through_the_api_is_a_one_line_error():
    import killtest

    with pytest.raises(killtest.KilltestError, match=r"argument --restart-delay: expected seconds .* not 'soon'"):
        killtest.fuzz("idempotent", restart_delay="soon")


def test_fuzz_searches_with_the_delay_in_every_runs_settings(tmp_path, monkeypatch):
    """One example on the idempotent design; the search (campaigns/fuzz_plan.py, engineer B's) is watched, not
    replaced: it runs with the settings it was given, and they carry the delay."""
    import killtest
    from killtest.harness.campaigns import fuzz_plan

    given = []
    search = fuzz_plan.fuzz_design

    def watched(design, run_settings, **keywords):
        given.append(run_settings)
        return search(design, run_settings, **keywords)

    monkeypatch.setattr(fuzz_plan, "fuzz_design", watched)
    result = killtest.fuzz("idempotent", examples=1, jobs=1, restart_delay="backoff:0.2:0.4", out=tmp_path / "out",
                           log=open(os.devnull, "w"))
    assert [settings.restart_delay for settings in given] == [RestartDelay(0.2, 0.4)]
    assert result.passed, result.report()
