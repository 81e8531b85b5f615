"""A store-write point lands on the write it names when the design names a file after its base URL's port
(Crawlee hashes a request's URL, port included, into its queue file's name): the recording that aims the
point and the killed run must see the same port, or the point must not kill elsewhere."""

import json
import os
import shutil
import tempfile

import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness.design.registry import design_named
from killtest.harness.faults.schedule import parse_schedule
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


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_w1_kills_before_the_write_to_the_port_named_file_not_at_a_later_write(tmp_path):
    (tmp_path / "scraper.py").write_text(SCRAPER)
    (tmp_path / "design.toml").write_text(SPEC)
    design = design_named(str(tmp_path / "design.toml"))
    settings = RunSettings(lease_s=0.2, time_limit_s=30)
    with SiteServer(build_catalog(listing_pages=1, products_per_page=2)) as site, \
            StoreServers([design]) as servers:
        schedule = resolve_schedule(parse_schedule("w1", design), design, Stage(site, servers, {}), settings)
        with tempfile.TemporaryDirectory(prefix="killtest-test-") as work_dir:
            history = run_kill_test(design, schedule, site, work_dir, settings)
            queues = {name: os.path.getsize(os.path.join(work_dir, name))
                      for name in os.listdir(work_dir) if name.startswith("queue-")}
    assert schedule.points[0].plan.paths[0] in queues, (schedule.points[0].plan, queues)
    # Two starts: the first killed before its write to its queue file, the second ran to the end.
    assert [k["returncode"] for k in history.of_type("kill")] == [-9]
    assert sorted(queues.values()) == [2], queues  # one queue file, written only by the second start
    assert [json.dumps(r["key"]) for r in history.of_type("store_record")] == ['"none"']
