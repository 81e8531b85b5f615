"""naive-page-commit: the naive control read as one commit per listing page (docs/explanation/article-
reproduction.md)."""

import sqlite3

import requests

from killtest.harness.check.checker import check_run
from killtest.harness.design.registry import built_in_designs, design_named
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.report.campaign import Campaign, summarise
from killtest.harness.report.sections import report_sections
from killtest.harness.running.runner import RunSettings, run_kill_test
from killtest.scrapers import naive, naive_page_commit


def commits_of_one_crawl(module, base_url, db_path):
    """The COMMITs and rows of one uninterrupted in-process crawl, seen by SQLite's statement trace."""
    db = sqlite3.connect(db_path)
    db.executescript(naive.SCHEMA)
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    module.crawl(db, base_url, requests.Session())
    rows = db.execute("SELECT count(*) FROM products").fetchone()[0]
    return sum(s.strip() == "COMMIT" for s in statements), rows


def test_it_is_a_built_in_control_like_naive():
    design = built_in_designs()["naive-page-commit"]
    assert design.control and design_named("naive").control
    assert design.store.records == design_named("naive").store.records


def test_it_commits_once_per_listing_page_where_naive_commits_once_per_product(site, small_catalog, tmp_path):
    pages, products = 4, len(small_catalog.truth())
    assert commits_of_one_crawl(naive_page_commit, site.base_url, tmp_path / "page.sqlite") == (pages, products)
    assert commits_of_one_crawl(naive, site.base_url, tmp_path / "product.sqlite") == (products, products)


def test_a_kill_mid_page_loses_that_page_and_the_restart_duplicates_the_pages_before(site, small_catalog, tmp_path):
    # Four listing pages of ten: requests 1-11 are page 1 and its products, 12-22 page 2. Killed at the
    # 18th, before its answer: page 1 was committed, page 2's five products fetched so far were not.
    design = design_named("naive-page-commit")
    history = run_kill_test(design, parse_schedule("r18"), site, str(tmp_path), RunSettings())
    verdict = check_run(design, 1, history, small_catalog)
    assert verdict.kills == 1
    assert verdict.distinct_records == verdict.correct_records == 40 and verdict.missing_records == 0
    assert verdict.rows == 40 + 10  # the restart stores all 40 again; only page 1 survived the kill
    assert verdict.duplicated_records == 10
    assert verdict.valid and "control_without_duplicates" not in verdict.findings
    # The report puts the article's naive figures beside it, as beside naive.
    campaign = Campaign(command="killtest run", settings={"health_threshold": 1.3}, verdicts=[verdict],
                        controls=[design.name])
    rows = [section.rows for section in report_sections(campaign) if section.title.startswith("Run by run")][0]
    assert rows[0][2:4] == ["50 (2,165)", f"{verdict.requests} (2,283)"]
    assert summarise(campaign)[design.name]["published_wall_s"] == [9.2, 10.8]
