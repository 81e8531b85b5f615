"""Bring your own site: record a site once through mitmproxy, replay it as the fixture, kill-test the scraper.

No internet: the site is killtest.fixture_site.recordings.second_site's bookshop on loopback ports, reached as
books.test through the recording proxy's --resolve; the scraper is an unchanged Scrapy spider
(examples/recorded-site/).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("warcio", reason="pip install -e '.[record]'")
# The proxy runs from its own env (mitmproxy at exact pins, ~/.cache/killtest/tools/), built once for the session
# by the `recording_proxy_env` fixture: every test and fixture here that starts a proxy asks for it, and the
# pure ones (matching, masking, the scan) do not, so the fast lane builds nothing.
# The bookshop's spider is a user's Scrapy spider, run on the user's interpreter ({python}): here the
# project's .venv, which has Scrapy from the `test` extra.
pytest.importorskip("scrapy", reason="pip install -e '.[test]'")

import requests  # noqa: E402
from warcio.warcwriter import WARCWriter  # noqa: E402

from killtest.fixture_site.recordings.recorded_site import (  # noqa: E402
    load_recorded_site,
    match_key,
    write_exchange,
    write_reference,
)
from killtest.fixture_site.recordings.replay import UNRECORDED, ReplaySite  # noqa: E402
from killtest.fixture_site.recordings.second_site import BookshopServer  # noqa: E402
from killtest.fixture_site.toxics import parse_toxics  # noqa: E402
from killtest.harness import lifeline  # noqa: E402
from killtest.harness.campaigns.record_site import _refuse_disagreement, record_design  # noqa: E402
from killtest.harness.check.findings import Finding  # noqa: E402
from killtest.harness.check.named_checks import Evidence, recording  # noqa: E402
from killtest.harness.design.site_spec import one_site  # noqa: E402
from killtest.harness.design.specfile import load_spec  # noqa: E402
from killtest.harness.errors import KilltestError  # noqa: E402
from killtest.harness.history import History  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "recorded-site")


def test_matching_is_exact_but_for_the_ignored_parameters():
    assert match_key("get", "http://Books.test/c?page=2&s=1") == "GET http://books.test/c?page=2&s=1"
    assert match_key("GET", "http://books.test/c?page=2") != match_key("GET", "http://books.test/c?page=3")
    assert match_key("GET", "http://books.test/c?s=9&page=2", ("s",)) == match_key("GET", "http://books.test/c?page=2")
    assert match_key("GET", "https://books.test/c") != match_key("GET", "http://books.test/c")


def _hand_made_recording(folder: str) -> str:
    path = os.path.join(folder, "site.warc.gz")
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        write_exchange(writer, "http://books.test/a?page=1", "GET", [("Host", "books.test")], b"", 200, "OK",
                       [("Content-Type", "text/plain"), ("Transfer-Encoding", "chunked")], b"page one")
        write_exchange(writer, "https://books.test/secure", "GET", [("Host", "books.test")], b"", 200, "OK",
                       [("Content-Type", "text/plain")], b"over tls")
        write_exchange(writer, "http://books.test/old", "GET", [], b"", 301, "Moved",
                       [("Location", "/a?page=1")], b"")
    write_reference(path, "http://books.test/", 3, {"k1": {"price": "1.00"}})
    return path


def test_the_replay_answers_from_the_warc_and_fails_closed(tmp_path, recording_proxy_env):
    site = load_recorded_site(_hand_made_recording(str(tmp_path)), "http://books.test/", ("session",))
    assert [p.sku for p in site.products] == ["k1"] and site.full_crawl_requests == 3
    with lifeline.temp_dir(prefix="killtest-test-proxy-") as confdir, \
            ReplaySite(site, confdir, recording_proxy_env) as replay:
        env = replay.scraper_env()
        proxies = {"http": env["HTTP_PROXY"], "https": env["HTTPS_PROXY"]}
        got = requests.get("http://books.test/a?page=1&session=x", proxies=proxies, timeout=10)
        assert (got.status_code, got.text) == (200, "page one")
        tls = requests.get("https://books.test/secure", proxies=proxies, verify=env["SSL_CERT_FILE"], timeout=10)
        assert (tls.status_code, tls.text) == (200, "over tls")  # the scraper trusts the proxy's generated CA
        moved = requests.get("http://books.test/old", proxies=proxies, timeout=10, allow_redirects=False)
        assert (moved.status_code, moved.headers["Location"]) == (301, "/a?page=1")
        # Never forwarded: a name that cannot resolve would be a 502 from the proxy, not the replay's 404.
        missing = requests.get("http://nowhere.invalid/x", proxies=proxies, timeout=10)
        assert missing.status_code == 404 and missing.headers.get(UNRECORDED) == "1"
        logged = [served.path for served in replay.request_log.snapshot()]
        replay.set_toxics(parse_toxics("error=1"), 1)  # the shop's toxics act on the replay's answers too
        faulted = requests.get("http://books.test/a?page=1", proxies=proxies, timeout=10)
        assert faulted.status_code == 503 and replay.request_log.snapshot()[-1].fault == "error"
    # `session` looks like a credential: the proxy masks it before the request reaches the log.
    assert logged == ["/http://books.test/a?page=1&session=killtest-redacted", "/https://books.test/secure", "/http://books.test/old",
                      "/http://nowhere.invalid/x"]
    history = History()
    for path in logged:
        history.add("request", 0.0, path=path, status=200, start=0)
    found = recording(Evidence(None, None, history, site, None))  # type: ignore[arg-type]  # reads only these two
    assert [f for f, _ in found.findings] == [Finding.UNRECORDED_REQUEST]
    assert found.figures == {"unrecorded_requests": 1} and "nowhere.invalid" in found.findings[0][1]


def test_two_replays_that_disagree_are_refused_naming_the_records():
    with pytest.raises(KilltestError, match=r"disagree on 2 record\(s\) \(a, c\)"):
        _refuse_disagreement(load_spec(os.path.join(EXAMPLE, "design.toml")),
                             {"a": {"price": "1"}, "b": {"price": "2"}}, {"b": {"price": "2"}, "c": {"price": "3"}})


def test_a_bad_site_table_is_one_line_naming_it(tmp_path):
    spec = tmp_path / "design.toml"
    text = open(os.path.join(EXAMPLE, "design.toml")).read().replace('"http://books.test/"', '"books.test"')
    spec.write_text(text)
    with pytest.raises(KilltestError, match=r"design.toml:\d+: site.start_url must be an http"):
        load_spec(str(spec))


@pytest.fixture(scope="module")
def recorded_bookshop(recording_proxy_env, tmp_path_factory):
    """The example spider and spec in a folder of their own, the bookshop recorded through it."""
    folder = str(tmp_path_factory.mktemp("recorded-site"))
    for name in ("spider.py", "design.toml"):
        shutil.copy(os.path.join(EXAMPLE, name), folder)
    with BookshopServer(folder) as shop:
        made = record_design(load_spec(os.path.join(folder, "design.toml")), shop.resolve(), True, 90)
        truth = shop.truth()
    return folder, made, truth


@pytest.mark.slow
def test_recording_the_bookshop_gives_its_every_book_as_the_reference(recorded_bookshop):
    folder, made, truth = recorded_bookshop
    with open(made.reference) as src:
        reference = json.load(src)
    # The spider's items through the proxy, over HTTP and HTTPS, gzip and a redirect: every book, right.
    assert {r["key"]: r["fields"] for r in reference["records"]} == truth
    assert made.records == len(truth) and made.requests >= len(truth) + 5  # the pages, robots.txt, the redirect
    assert made.exchanges >= made.requests - 1 and made.warc_bytes > 0


@pytest.mark.slow
def test_the_unchanged_spider_is_kill_tested_against_the_replay(recorded_bookshop, tmp_path):
    folder, made, truth = recorded_bookshop
    out = str(tmp_path / "results")
    finished = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", os.path.join(folder, "design.toml"),
                               "--schedule", "r12", "--runs", "1", "--out", out, "--no-plot"],
                              capture_output=True, text=True, timeout=180)
    assert finished.returncode in (0, 1), finished.stderr
    with open(os.path.join(out, "killtest.json")) as src:
        verdict = json.load(src)["runs"][0]
    assert verdict["kills"] == 1 and "unrecorded_request" not in verdict["findings"]
    assert verdict["correct_records"] + verdict["missing_records"] == len(truth)
    assert verdict["minimum_requests"] == made.requests
    assert verdict["valid"] == (finished.returncode == 0)


def test_designs_of_one_run_must_meet_the_same_site():
    recorded = load_spec(os.path.join(EXAMPLE, "design.toml"))
    from killtest.harness.design.registry import design_named

    with pytest.raises(KilltestError, match="must meet the same site"):
        one_site([recorded, design_named("naive")])
    assert one_site([design_named("naive")]) is None


ZOO = [("memory-frontier", "memory_frontier.toml", "r5", 3.0),
       ("exits-with-leases", "exits_with_leases.toml", "r3", 2.0),
       ("done-before-record", "done_before_record.toml", "l:scrapers/zoo/done_before_record.py:complete+3:2", 3.0)]


def _with_site(folder: str, base: str, name: str) -> str:
    """A spec that extends `base` and names the recorded shop."""
    path = os.path.join(folder, f"{name}.toml")
    with open(path, "w") as out:
        out.write(f'extends = "{base}"\n[site]\nrecording = "shop.warc.gz"\nstart_url = "http://shop.test"\n')
    return path


@pytest.mark.slow
@pytest.mark.serial  # timing-sensitive: a lease zoo design's kill missed under xdist on a loaded machine
def test_the_recorded_shop_gives_the_zoo_the_same_verdicts_as_the_shop(recording_proxy_env, tmp_path):
    from killtest.fixture_site.catalog import build_catalog
    from killtest.fixture_site.server import SiteServer
    from killtest.harness.faults.schedule import parse_schedule
    from killtest.harness.running.orchestrator import check_phase, run_phase, stage
    from killtest.harness.running.runner import RunSettings

    root = os.path.dirname(EXAMPLE.rstrip(os.sep).rsplit(os.sep, 1)[0])
    catalog = build_catalog(2, 5)
    with SiteServer(catalog) as shop:
        made = record_design(load_spec(_with_site(str(tmp_path), os.path.join(root, "scrapers", "idempotent.toml"),
                                                  "idempotent")),
                             [f"shop.test:80=127.0.0.1:{shop.base_url.rsplit(':', 1)[1]}"], False, 60)
    assert made.records == 10 and made.requests == catalog.full_crawl_requests
    for name, spec, schedule, lease in ZOO:
        native = load_spec(os.path.join(root, "scrapers", "zoo", spec))
        recorded = load_spec(_with_site(str(tmp_path), os.path.join(root, "scrapers", "zoo", spec), name))
        findings = []
        for design in (native, recorded):
            settings = RunSettings(lease_s=lease, time_limit_s=30)
            with stage(catalog, [design]) as on:
                history = run_phase(on, design, parse_schedule(schedule), settings)
                findings.append(check_phase(design, 1, history, on.site.catalog).findings)
        assert findings[0] == findings[1] and findings[0], (name, findings)
