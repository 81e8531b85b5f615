"""Kills land whatever the pace: a user's design on timed kills is measured by one unkilled start, and the
kill delays and time limit are made from what it showed; a figure the user gave is used exactly; the built-in
designs keep the article's schedule. Histories and figures are made by hand, as every checker test's."""

import json
import shlex
import subprocess
import sys

import pytest

from killtest.harness import defaults
from killtest.harness.check.categories import sort_kills
from killtest.harness.cli.plans_from_args import first_request_wait, kill_delay, kill_spread
from killtest.harness.errors import KilltestError
from killtest.harness.faults.schedule import timed_schedule
from killtest.harness.history import History
from killtest.harness.running.pace import figures_of, needs_measuring, paced


def unkilled(first_request=2.6, exited=6.2, outcome="completed"):
    h = History()
    h.add("run_started", 0.0, design="x", seed=None, kill_points=[], time_limit_s=900)
    h.add("process_started", 0.1, start=0, pid=1)
    h.add("side_request", 0.1 + first_request - 0.5, path="/favicon.ico", status=404, start=0, kind="browser")
    h.add("request", 0.1 + first_request, path="/list/0", status=200, start=0)
    h.add("request", 0.1 + first_request + 1, path="/list/1", status=200, start=0)
    if outcome == "completed":
        h.add("process_exited", 0.1 + exited, start=0, returncode=0, held_leases=[])
    h.add("run_finished", 0.2 + exited, outcome=outcome, wall_s=0.2 + exited)
    return h


def test_the_unkilled_start_gives_its_start_up_to_the_first_crawl_request_and_its_crawl_time():
    assert figures_of(unkilled()) == (2.6, 6.2)


def test_an_unkilled_start_that_did_not_finish_is_one_line_naming_the_options_that_pin_the_figures():
    with pytest.raises(KilltestError, match="--kill-delay LOW,HIGH and --time-limit SECONDS"):
        figures_of(unkilled(outcome="timed_out"))


def test_kills_count_from_each_first_request_spread_over_the_work_and_the_time_limit_covers_the_crawl():
    measured = paced(2.6, 199.0, 10, None, None, ["crawlee-playwright"])
    work = 199.0 - 2.6
    # Spread over the whole measured work, from the article's 0.2 s to nine tenths of it: early and late.
    assert measured.after_first_request_s == (0.2, round(defaults.KILL_WINDOW_SHARE * work, 2))
    assert measured.kill_delay_s == measured.after_first_request_s and measured.spread
    wait = measured.first_request_wait_s
    assert wait == round(2.6 * defaults.FIRST_REQUEST_WAIT_STARTUPS, 2)
    # At its latest a kill comes the wait and its delay after its spawn (a start with no request by then).
    high = measured.kill_delay_s[1]
    assert measured.time_limit_s == round(10 * (wait + high) + defaults.TIME_LIMIT_CRAWLS * 199.0)
    assert measured.pin == f"--kill-delay f0.2~{high:g}:{wait:g} --time-limit {measured.time_limit_s:g}"


def test_a_short_crawl_is_killed_over_its_work_and_never_gets_less_than_the_default_limit():
    measured = paced(0.1, 0.5, 10, None, None, ["quick"])
    assert measured.after_first_request_s == (0.07, 0.36)  # a fifth of nine tenths of its 0.4 s of work, to 0.36 s
    assert measured.kill_delay_s == measured.after_first_request_s
    assert measured.time_limit_s == defaults.TIME_LIMIT_S


def test_figures_the_user_gave_are_used_exactly():
    measured = paced(2.6, 199.0, 10, (3.0, 5.0), 420.0, ["x"])
    assert measured.kill_delay_s == (3.0, 5.0) and measured.time_limit_s == 420.0
    assert paced(2.6, 6.0, 10, (3.0, 5.0), None, ["x"]).time_limit_s == defaults.TIME_LIMIT_S


def test_the_same_seed_and_the_same_measured_figures_give_the_same_kill_points():
    one, two = paced(2.6, 30.0, 10, None, None, ["x"]), paced(2.6, 30.0, 10, None, None, ["x"])
    wait = one.first_request_wait_s
    assert timed_schedule(7, 10, *one.kill_delay_s, first_request_wait_s=wait, spread=True) == \
        timed_schedule(7, 10, *two.kill_delay_s, first_request_wait_s=wait, spread=True)
    # The pinned figures, as the report prints them, give that schedule back without measuring.
    pinned = one.pin.split()[1]
    assert kill_spread(pinned) and not kill_spread("f0.2,1:8") and not kill_spread("0.2,1")
    assert timed_schedule(7, 10, *kill_delay(pinned), first_request_wait_s=first_request_wait(pinned), spread=True) == \
        timed_schedule(7, 10, *one.kill_delay_s, first_request_wait_s=wait, spread=True)


@pytest.mark.parametrize("given, timed, delay, limit, measured", [
    (["naive", "idempotent"], True, False, False, False),  # the article's experiment keeps its schedule
    (["my/design.toml"], True, False, False, True),
    (["design.toml"], True, True, False, True),  # the time limit is still to measure
    (["design.toml"], True, True, True, False),  # both pinned: nothing to measure
    (["design.toml"], False, False, False, False),  # exact kill points (--schedule) need no delay
])
def test_only_a_users_design_on_timed_kills_is_measured(given, timed, delay, limit, measured):
    assert needs_measuring([object()], given, timed, delay, limit) is measured


def killed_while_waiting(measured_startup_s):
    """A first start killed at work, then a start that made no request (its queue locked) killed 20 s in."""
    h = History()
    h.add("run_started", 0.0, design="x", seed=1, kill_points=["t3", "t20"], time_limit_s=120,
          measured_startup_s=measured_startup_s)
    h.add("process_started", 0.0, start=0, pid=1)
    h.add("request", 2.6, path="/list/0", status=200, start=0)
    h.add("kill", 3.0, start=0, signal="SIGKILL", returncode=-9, held_leases=[])
    h.add("process_started", 3.1, start=1, pid=2)
    h.add("kill", 23.1, start=1, signal="SIGKILL", returncode=-9, held_leases=[])
    h.add("process_started", 23.2, start=2, pid=3)
    h.add("run_finished", 30.0, outcome="completed", wall_s=30.0)
    return h


def test_a_kill_on_a_start_alive_past_the_measured_start_up_without_a_request_lands_at_work_waiting():
    kills = sort_kills(killed_while_waiting(2.6))
    assert [(k.status, k.waiting) for k in kills] == [("landed", False), ("landed", True)]


def test_without_a_measured_start_up_a_start_that_made_no_request_is_still_before_work():
    assert [k.status for k in sort_kills(killed_while_waiting(None))] == ["landed", "before_work"]


def test_a_replay_of_an_f_point_past_its_wait_counts_the_kill_waiting_as_the_measured_run_did():
    """A replay line carries the f points, not the measured start-up: the point's own wait says the same."""
    history = killed_while_waiting(None)
    for kill, point in zip(history.of_type("kill"), ("f0.4:7.4", "f0.5:7.4")):
        kill["point"] = point
    assert [(k.status, k.waiting) for k in sort_kills(history)] == [("landed", False), ("landed", True)]


def test_a_first_request_long_after_the_measured_start_up_is_waiting_not_start_up():
    """The issue's median "start-up" of 85.8 s was starts waiting out Crawlee's request locks."""
    from killtest.harness.check.liveness import start_paces
    from killtest.harness.check.run_figures import _median_startup

    h = killed_while_waiting(2.6)
    h.add("request", 23.2 + 177.0, path="/list/1", status=200, start=2)  # start 3 waited 177 s for a lock
    h.first("run_finished")["t"] = 201.0
    h = h.sorted()
    assert _median_startup(h) == 2.6  # start 1's: start 3's 177 s is not start-up
    last = start_paces(h)[-1]
    assert last.startup_s == 177.0 and last.waiting_s == round(177.0 - 2.6 * defaults.STARTUP_MARGIN, 3)


def test_a_start_with_no_request_in_a_crawl_nobody_has_begun_is_still_starting_not_waiting():
    """On a loaded machine a start-up may outlast the margin: with no request yet in the whole run, the
    start is still starting, and a kill then is before work."""
    h = History()
    h.add("run_started", 0.0, design="x", seed=1, kill_points=["t20"], time_limit_s=120, measured_startup_s=2.6)
    h.add("process_started", 0.0, start=0, pid=1)
    h.add("kill", 20.0, start=0, signal="SIGKILL", returncode=-9, held_leases=[])
    h.add("process_started", 20.1, start=1, pid=2)
    h.add("run_finished", 30.0, outcome="completed", wall_s=30.0)
    assert [(k.status, k.waiting) for k in sort_kills(h)] == [("before_work", False)]


def _run(tmp_path, *words):
    import json
    import subprocess
    import sys

    from killtest.harness.design.model import PROJECT_ROOT

    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "killtest", "run", *words, "--runs", "1", "--kills", "2",
                           "--listing-pages", "2", "--per-page", "3", "--lease", "0.5", "--no-plot", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT)
    assert done.returncode in (0, 1), done.stderr
    return done.stderr, json.loads((out / "killtest.json").read_text())


def test_a_design_given_by_its_spec_is_measured_and_its_replay_line_pins_the_time_limit(tmp_path):
    said, report = _run(tmp_path, "--design", "scrapers/idempotent.toml")
    measured = report["settings"]["measured_pace"]
    assert "measuring the pace of idempotent from one unkilled start" in said
    assert f"(pin them: {measured['pin']})" in said  # before the runs, and again at the end
    assert said.count(f"pin them: {measured['pin']}") == 2
    assert report["settings"]["kill_delay_s"] == measured["kill_delay_s"]
    assert report["settings"]["time_limit_s"] == measured["time_limit_s"]
    replay = report["settings"]["replays"]["idempotent"][0]
    assert f"--time-limit {measured['time_limit_s']:g}" in replay
    # Its kills count from each start's first request (`f` points), and its replay line names them and runs.
    wait = measured["first_request_wait_s"]
    assert measured["pin"].startswith(f"--kill-delay f{measured['kill_delay_s'][0]:g}~") and wait > 0
    words = shlex.split(replay)
    schedule = words[words.index("--schedule") + 1]
    assert [p.endswith(f":{wait:g}") and p.startswith("f") for p in schedule.split(",")] == [True, True]
    done = subprocess.run([sys.executable, "-m", "killtest", *words[1:], "--out", str(tmp_path / "replay")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    # It runs (a kill may come after so short a crawl finished: a run that proved nothing, not an error).
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr[-2000:]
    replayed = json.loads((tmp_path / "replay" / "replay.json").read_text())
    assert replayed["runs"][0]["kills_planned"] == 2 and replayed["runs"][0]["missing_records"] == 0


def test_pinned_figures_are_used_exactly_and_nothing_is_measured(tmp_path):
    said, report = _run(tmp_path, "--design", "scrapers/idempotent.toml", "--kill-delay", "0.01,0.02",
                        "--time-limit", "61")
    assert "measuring" not in said and report["settings"]["measured_pace"] is None
    assert report["settings"]["kill_delay_s"] == [0.01, 0.02] and report["settings"]["time_limit_s"] == 61
    # 10-20 ms after the spawn is before any interpreter's first request: the line says so and what to change.
    assert "2 of 2 kills landed before work" in said and "give --kill-delay LOW,HIGH past the start-up" in said


def test_the_built_in_designs_by_name_keep_the_articles_schedule_and_limit(tmp_path):
    said, report = _run(tmp_path, "--design", "idempotent")
    assert "measuring" not in said and report["settings"]["measured_pace"] is None
    assert report["settings"]["kill_delay_s"] == list(defaults.KILL_DELAY)
    assert report["settings"]["time_limit_s"] == defaults.TIME_LIMIT_S


SKIPS_THE_FIRST_PAGE = """
import json, re, sys, urllib.request
base, out = sys.argv[1], sys.argv[2]
page = 1  # the mistake: the shop's listing starts at /list/0
with open(out, "a") as store:
    while True:
        try:
            html = urllib.request.urlopen(f"{base}/list/{page}").read().decode()
        except Exception:
            break
        for path in sorted(set(re.findall(r'href="(/product/[0-9]+)"', html))):
            text = urllib.request.urlopen(base + path).read().decode()
            sku = re.search(r'"sku": *"([^"]+)"', text).group(1)
            price = float(re.search(r'"price": *"?([0-9.]+)', text).group(1))
            store.write(json.dumps({"sku": sku, "price": price}) + "\\n")
        page += 1
"""


def test_an_unkilled_start_that_leaves_records_unstored_is_one_line_and_no_killed_run_blames_a_kill(tmp_path):
    """A crawler that never stores the first listing page's products, given by its spec at the defaults: its
    unkilled measuring start already misses them, so every killed run would count them lost. killtest says so in
    one line, exit 2, before any kill; a spec that waives no_lost_records is measured and run as before."""
    program = tmp_path / "crawl.py"
    program.write_text(SKIPS_THE_FIRST_PAGE)
    spec = tmp_path / "design.toml"
    body = (f'command = {json.dumps([sys.executable, str(program), "{base_url}", "{store}"])}\n\n[store]\n'
            'kind = "jsonl"\npath = "{work_dir}/items.jsonl"\nkey = "sku"\nfields = ["price"]\n')
    spec.write_text('[design]\nname = "skips-page-0"\n' + body)
    words = [sys.executable, "-m", "killtest", "run", "--design", str(spec), "--listing-pages", "2", "--per-page", "3",
             "--runs", "1", "--kills", "2", "--out", str(tmp_path / "out")]
    done = subprocess.run(words, capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 2, done.stderr[-2000:]
    error = done.stderr.strip().splitlines()[-1]
    assert "crawled to its end and left 3 of 6 records unstored with no kill at all" in error, error
    assert "Traceback" not in done.stderr and not (tmp_path / "out" / "killtest.json").exists()
    spec.write_text('[design]\nname = "skips-page-0"\ndoes_not_promise = ["no_lost_records"]\n' + body)
    done = subprocess.run(words, capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert "measured: first request after" in done.stderr + done.stdout, done.stderr[-2000:]
    assert (tmp_path / "out" / "killtest.json").exists()
