"""Content drift: the site's catalog changes between and during crawls; the store must follow it."""

import pytest
import requests

from killtest.fixture_site.catalog import Drift, build_catalog, changes_between, drifted, parse_drift
from killtest.fixture_site.server import SiteServer
from killtest.harness.check.checker import check_run
from killtest.harness.design.registry import design_named
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.running.runner import RunSettings, run_kill_test


def test_a_drift_is_the_same_for_the_same_seed_and_version_and_changes_what_it_says():
    catalog = build_catalog()
    drift = Drift(changed=0.1, removed=0.02, added=0.02, seed=4)
    after = drifted(catalog, drift, 1)
    assert after == drifted(catalog, drift, 1) != drifted(catalog, drift, 2)
    changes = changes_between(catalog, after)
    assert 30 <= len(changes["changed"]) <= 70 and 3 <= len(changes["removed"]) <= 20
    assert len(changes["added"]) == 10 and len(after.products) == 500 - len(changes["removed"]) + 10
    assert all(after.product(p.index) == p for p in after.products)
    removed_indexes = [int(catalog.paths_by_sku()[sku].rsplit("/", 1)[1]) for sku in changes["removed"]]
    assert all(after.product(index) is None for index in removed_indexes)


@pytest.mark.parametrize("text, says", [("moved=0.1", "bad drift 'moved=0.1'"), ("changed=2", "between 0 and 1"),
                                        ("added=lots", "takes a share")])
def test_a_bad_drift_spec_is_one_line(text, says):
    with pytest.raises(ValueError, match=says):
        parse_drift(text)


def test_the_site_serves_the_drifted_catalog_from_the_next_request():
    catalog = build_catalog(2, 5)
    after = drifted(catalog, Drift(changed=0, removed=0.5, added=0.4, seed=2), 1)
    gone = next(p for p in catalog.products if after.product(p.index) is None)
    new = after.products[-1]
    with SiteServer(catalog) as site:
        assert requests.get(site.base_url + gone.path, timeout=5).status_code == 200
        site.set_catalog(after)
        assert requests.get(site.base_url + gone.path, timeout=5).status_code == 404
        last_listing = f"/list/{after.listing_pages - 1}"
        assert new.path in requests.get(site.base_url + last_listing, timeout=5).text


def test_the_idempotent_design_follows_drift_during_and_between_crawls_under_kills(tmp_path):
    """Changed records updated with a new last_changed, unchanged ones left alone, removed ones dropped."""
    design = design_named("idempotent")
    drift = Drift(changed=0.3, removed=0.1, added=0.1, seed=7)
    with SiteServer(build_catalog(4, 10, seed=5), pace_rps=100) as site:
        history = run_kill_test(design, parse_schedule("r9,r15"), site, str(tmp_path),
                                RunSettings(lease_s=1.0, time_limit_s=60, recrawls=1, drift=drift, drift_during_s=0.4))
        verdict = check_run(design, 1, history, site.catalog)
    assert verdict.site_changes == 2  # once during the killed crawl, once before the re-crawl
    assert verdict.valid, verdict.problems  # no stale, lost, removed-but-kept or rewritten record
    final = drifted(drifted(build_catalog(4, 10, seed=5), drift, 1), drift, 2)
    assert verdict.rows == verdict.correct_records == len(final.products)
