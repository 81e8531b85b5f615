"""Which requests are the crawl's (issue 33): a page the crawl asked for is one; a side request (a product's image,
a webhook, a browser's icon, what a loaded page asks for: Sec-Fetch-Dest other than a navigation's) never is.
Request points count the crawl's requests only, and so do the history and the progress lines.

A real site on 127.0.0.1, real HTTP requests carrying the headers Chromium sends; a real crawler killed at `r3`;
a hand-made strace log for the recording's count (`r5+` is aimed by it).
"""

from __future__ import annotations

import os
import tempfile
import urllib.error
import urllib.request

import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.request_log import browser_initiated
from killtest.fixture_site.server import SiteServer
from killtest.harness.check.checker import check_run
from killtest.harness.check.distinct import request_before
from killtest.harness.design.registry import design_named
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.faults.store_writes import parse_recording
from killtest.harness.running.runner import RunSettings, run_kill_test

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scraper_fixtures")


def get(url: str, **headers: str) -> None:
    try:
        urllib.request.urlopen(urllib.request.Request(url, headers=headers)).read()
    except urllib.error.HTTPError:
        pass  # the shop has no icon


@pytest.mark.parametrize("path, purpose, dest, browser", [
    ("/product/1", None, None, False),  # an HTTP client's request: no Fetch Metadata at all
    ("/product/1", None, "document", False),  # a browser's navigation (page.goto)
    ("/product/1", None, "iframe", False),
    ("/product/1", None, "image", True),  # a page's image, whatever its path
    ("/product/1", None, "script", True),
    ("/product/1", None, "style", True),
    ("/product/1", None, "empty", True),  # a page's script's fetch or XHR
    ("/product/1", "prefetch", "document", True),  # a speculative navigation
    ("/favicon.ico", None, None, True),  # the icon, however it is asked for
    ("/https://shop.example/apple-touch-icon.png", None, None, True),  # on a recorded site
])
def test_a_request_is_the_browsers_own_by_its_icon_path_purpose_or_fetch_destination(path, purpose, dest, browser):
    assert browser_initiated(path, purpose, dest) is browser


def test_the_request_hooks_see_the_designs_requests_and_none_of_the_browsers_own():
    """A point counts what the design asked for, the shop's image too (a kill between a record and its image is a
    side-effect design's point); the icon, a page's script and a prefetch are the browser's. The history's
    requests and bounded_requests count the crawl's pages only."""
    with SiteServer(build_catalog(listing_pages=1, products_per_page=2)) as site:
        arrived: list[str] = []
        sent: list[str] = []
        site.set_request_hook(arrived.append, after_sent=sent.append)
        base = site.base_url
        get(base + "/list/0")
        get(base + "/favicon.ico", **{"Sec-Fetch-Dest": "image"})
        get(base + "/product/0", **{"Sec-Fetch-Dest": "document"})
        get(base + "/image/0.png")
        get(base + "/product/1", **{"Sec-Fetch-Dest": "script"})
        get(base + "/product/1", **{"Sec-Purpose": "prefetch", "Sec-Fetch-Dest": "document"})
        site.set_request_hook(None)
        served = site.request_log.snapshot()
    assert arrived == ["/list/0", "/product/0", "/image/0.png"]
    assert sorted(sent) == ["/image/0.png", "/list/0", "/product/0"]
    assert [r.path for r in served if not r.side] == ["/list/0", "/product/0"]
    assert len(served) == 6 and site.request_log.crawl_total == 2


def test_r3_kills_at_the_crawls_third_page_whatever_the_side_requests_between(tmp_path):
    """The crawler asks for the icon after each page and each product's image: r3 is still its 3rd page."""
    spec = tmp_path / "design.toml"
    spec.write_text('[design]\nname = "side-requests"\ndoes_not_promise = ["bounded_requests"]\n'
                    f'command = ["python3", "{FIXTURES}/side_requests.py", "--base", "{{base_url}}", "--out",'
                    ' "{store}"]\n\n[store]\nkind = "jsonl"\npath = "{work_dir}/records.jsonl"\nkey = "sku"\n'
                    'fields = ["price", "name"]\nwritten_at = "scraped_at"\n')
    design = design_named(str(spec))
    catalog = build_catalog(listing_pages=1, products_per_page=3)
    with SiteServer(catalog) as site, tempfile.TemporaryDirectory(prefix="killtest-test-") as work_dir:
        history = run_kill_test(design, parse_schedule("r3", design), site, work_dir,
                                RunSettings(lease_s=0.2, time_limit_s=60))
    kill = history.first("kill")
    assert kill is not None and kill["returncode"] == -9
    killed_start = [e["path"] for e in history.of_type("request") if e["start"] == 0]
    assert killed_start == ["/list/0", catalog.products[0].path, catalog.products[1].path]
    assert request_before(history, kill["t"], 0) == (3, catalog.products[1].path)
    side = history.of_type("side_request")
    # The icon and the images, asked for with Sec-Fetch-Dest: image, are the browser's kind of request.
    assert {e["path"].split("/")[1] for e in side if e.get("kind") == "browser"} == {"favicon.ico", "image"}
    assert not any(e["path"] == "/favicon.ico" or e["path"].startswith("/image/") for e in history.of_type("request"))
    verdict = check_run(design, 1, history, catalog)
    assert verdict.valid, verdict.problems
    assert verdict.requests == len(history.of_type("request"))  # bounded_requests counts pages only


def test_the_recordings_request_count_leaves_the_icon_out_as_the_sites_hooks_do():
    """`r2+` is aimed by the recording's count of requests sent, as the site's hooks count: the icon is the
    browser's, the shop's image is the design's."""
    log = ('7 sendto(5<TCP:[1->2]>, "GET /list/0 HTTP/1.1\\r\\nHo"..., 80, 0, NULL, 0) = 80\n'
           '7 write(3</w/records.jsonl>, "x", 1) = 1\n'
           '9 sendto(6<TCP:[1->2]>, "GET /favicon.ico HTTP/1."..., 80, 0, NULL, 0) = 80\n'
           '9 sendto(6<TCP:[1->2]>, "GET /image/0.png HTTP/1."..., 80, 0, NULL, 0) = 80\n'
           '7 write(3</w/records.jsonl>, "y", 1) = 1\n'
           '7 sendto(5<TCP:[1->2]>, "GET /product/0 HTTP/1.1\\r"..., 80, 0, NULL, 0) = 80\n'
           '7 write(3</w/records.jsonl>, "z", 1) = 1\n')
    recording = parse_recording(log, {"work_dir": "/w"})
    assert [e for e in recording.events if e[0] == "request"] == [("request", 1), ("request", 2), ("request", 3)]
    assert recording.write_after_request(3) == 3  # after /product/0, its 3rd request: the icon is not counted
