"""A store-write point lands on the write it names when the design names a file after its base URL's port
(Crawlee hashes a request's URL, port included, into its queue file's name): the recording that aims the
point and the killed run must see the same port, or the point must not kill elsewhere; when it does all the
same, the delivered SIGKILL lands there and says so."""

import json
import os
import shutil
import socket
import tempfile

import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness.check.checker import check_run
from killtest.harness.cli.replay import off_aim_lines
from killtest.harness.design.registry import design_named
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.report.campaign import Campaign, verdict_words
from killtest.harness.running.orchestrator import Stage
from killtest.harness.running.runner import RunSettings, run_kill_test
from killtest.harness.running.write_plans import resolve_schedule
from killtest.harness.servers.for_stores import StoreServers

SCRAPER = '''\
import json, os, sys, urllib.request
base, work = sys.argv[1], sys.argv[2]
port = base.rstrip("/").rsplit(":", 1)[1]
urllib.request.urlopen(base + "/").read()
with open(os.path.join(work, f"queue-{port}.json"), "w") as f:  # the start's 1st store write
    f.write("{}")
with open(os.path.join(work, "records.jsonl"), "a") as f:  # its 2nd
    f.write(json.dumps({"sku": "none", "price": 0, "name": "none"}) + "\\n")
'''
SPEC = '''\
[design]
name = "port-named"
does_not_promise = ["bounded_requests", "no_duplicates"]
command = ["python3", "{spec_dir}/scraper.py", "{base_url}", "{work_dir}"]

[store]
kind = "jsonl"
path = "{work_dir}/records.jsonl"
key = "sku"
fields = ["price", "name"]
'''


needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
SETTINGS = RunSettings(lease_s=0.2, time_limit_s=30)


def w1_run(tmp_path, take_the_port=False):
    """`w1` aimed by a recording and run; `take_the_port`: another socket holds the recording's port in
    between, so the killed run is served on another one. (history, schedule, queue files and their sizes)"""
    (tmp_path / "scraper.py").write_text(SCRAPER)
    (tmp_path / "design.toml").write_text(SPEC)
    design = design_named(str(tmp_path / "design.toml"))
    with SiteServer(build_catalog(listing_pages=1, products_per_page=2)) as site, \
            StoreServers([design]) as servers, socket.socket() as blocker:
        schedule = resolve_schedule(parse_schedule("w1", design), design, Stage(site, servers, {}), SETTINGS)
        if take_the_port:
            # Listening, the port is the blocker's alone, whatever SO_REUSEADDR the site's next door sets;
            # SO_REUSEADDR here only lets it bind past the recording's connections still in TIME_WAIT.
            blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            blocker.bind(("127.0.0.1", int(schedule.points[0].plan.target[0][len("queue-"):-len(".json")])))
            blocker.listen()
        with tempfile.TemporaryDirectory(prefix="killtest-test-") as work_dir:
            history = run_kill_test(design, schedule, site, work_dir, SETTINGS)
            queues = {name: os.path.getsize(os.path.join(work_dir, name))
                      for name in os.listdir(work_dir) if name.startswith("queue-")}
        return history, schedule, queues, check_run(design, 1, history, site.catalog)


@pytest.mark.fault("w")
@needs_strace
def test_w1_kills_before_the_write_to_the_port_named_file_not_at_a_later_write(tmp_path):
    history, schedule, queues, verdict = w1_run(tmp_path)
    assert schedule.points[0].plan.paths[0] in queues, (schedule.points[0].plan, queues)
    # Two starts: the first killed before its write to its queue file, the second ran to the end.
    assert [k["returncode"] for k in history.of_type("kill")] == [-9]
    assert sorted(queues.values()) == [2], queues  # one queue file, written only by the second start
    assert [json.dumps(r["key"]) for r in history.of_type("store_record")] == ['"none"']


@needs_strace
def test_a_kill_the_count_brings_to_another_file_lands_there_and_says_it_was_off_its_aim(tmp_path):
    """The SIGKILL was delivered (-9) at a store write: the run tests a real crash, never "missed" or "proved
    nothing"; the kill says it was off the point's aim, and why."""
    history, schedule, queues, verdict = w1_run(tmp_path, take_the_port=True)
    assert schedule.points[0].plan.target[0] not in queues, queues  # the killed run wrote another port's file
    kills = history.of_type("kill")
    assert [k["returncode"] for k in kills] == [-9]  # killed all the same, at records.jsonl
    assert "queue-" in kills[0]["aimed_elsewhere"] and "records.jsonl" in kills[0]["aimed_elsewhere"]
    assert "killtest-" not in kills[0]["aimed_elsewhere"]  # files named relative to the run's temporary work dir
    assert (verdict.kills, verdict.kills_missed) == (1, 0)
    assert not verdict.proved_nothing and "no_kill_landed" not in verdict.findings, verdict.problems
    off_aim = [k["off_aim"] for k in verdict.kill_findings]
    assert len(off_aim) == 1 and "aimed at write number 1" in off_aim[0], off_aim


@needs_strace
def test_replay_says_the_kill_landed_off_its_aim_and_counts_it(tmp_path):
    """What `killtest replay` prints for such a run: a line naming the write the count reached, and the run judged."""
    history, schedule, queues, verdict = w1_run(tmp_path, take_the_port=True)
    campaign = Campaign(command="killtest replay", settings={}, verdicts=[verdict], complete=True)
    lines = off_aim_lines(campaign)
    assert len(lines) == 1 and lines[0].startswith("port-named run 1: the kill landed at another write than the"
                                                   " point names: the kill was meant for the 1st write of its thread"
                                                   " to queue-")
    assert "but it came at a write to records.jsonl" in lines[0] and "strace" not in lines[0]  # plain words
    assert "proved nothing" not in verdict_words(campaign)
