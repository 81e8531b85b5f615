"""Side effects beyond the store: files, webhooks and a counter, after real kills and on hand-made histories."""

import os

import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness.check.checker import check_run
from killtest.harness.check.side_effects import check_side_effects, side_effect_findings
from killtest.harness.design.registry import design_named
from killtest.harness.design.specfile import load_spec
from killtest.harness.errors import KilltestError
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.history import History
from killtest.harness.running.runner import RunSettings, run_kill_test


def run(name, schedule, tmp_path):
    design = design_named(name)
    with SiteServer(build_catalog(3, 6, seed=9)) as site:
        history = run_kill_test(design, parse_schedule(schedule), site, str(tmp_path),
                                RunSettings(lease_s=0.5, time_limit_s=60))
        return check_run(design, 1, history, site.catalog)


def test_idempotent_side_effects_survive_kills_as_one_file_one_announcement_and_a_true_count(tmp_path):
    # r11 and r20 land between a product's page, its image and its webhook (three requests a product).
    verdict = run("idempotent-effects", "r11,r20,r5", tmp_path)
    effects = verdict.side_effects
    assert verdict.valid, verdict.problems
    assert effects["files"] == effects["records"] == 18 and effects["duplicate_files"] == 0
    assert effects["distinct_keys"] == 18 and effects["duplicate_notifications"] == 0 and not effects["unnotified"]
    assert effects["counter"] == 18


def test_a_cut_or_refused_image_and_a_failed_webhook_are_retried_not_stored_broken(tmp_path):
    from killtest.fixture_site.toxics import parse_toxics

    design = design_named("idempotent-effects")
    with SiteServer(build_catalog(3, 6, seed=9)) as site:
        # A cut PNG still starts like one: only its missing IEND chunk tells it apart.
        site.set_toxics(parse_toxics("truncate=0.15,error=0.05,reset=0.05"), 3)
        history = run_kill_test(design, parse_schedule("r11"), site, str(tmp_path),
                                RunSettings(lease_s=0.5, time_limit_s=60))
        verdict = check_run(design, 1, history, site.catalog)
    faulted = {e["path"].split("/")[1] for e in history.of_type("side_request") if e.get("fault")}
    assert faulted == {"image", "webhook"}, faulted  # the seed hits both kinds of side request
    # And /product/13 fails five times in a row: the start leaves it claimed and goes on; its lease brings it back.
    assert [e["path"] for e in history.of_type("scraper_event") if e["name"] == "page_deferred"] == ["/product/13"]
    assert verdict.valid, verdict.problems
    assert verdict.side_effects["files"] == 18 and verdict.side_effects["duplicate_notifications"] == 0


def test_naive_side_effects_duplicate_files_and_webhooks_and_inflate_the_counter(tmp_path):
    verdict = run("naive-effects", "r20", tmp_path)  # six products stored before the kill, then again
    assert {"duplicate_files", "duplicate_webhooks", "wrong_counter"} <= set(verdict.findings), verdict.problems
    assert verdict.side_effects["counter"] > verdict.side_effects["records"] == 18


def test_the_side_effect_checks_read_files_deliveries_and_the_counter_from_the_history():
    catalog = build_catalog(1, 2)
    first, second = catalog.products
    history = History()
    history.add("side_file", 1.0, name="a.png", sha256=first.image_hash)
    history.add("side_file", 1.0, name="b.png", sha256=first.image_hash)  # the same picture twice
    history.add("side_file", 1.0, name="c.png.123.tmp", sha256="0" * 64)
    for key in ("k1", "k1", "k2"):  # k1 repeated (droppable); k2 announces the same version again
        history.add("webhook", 1.0, key=key, payload={"sku": first.sku, "price": first.price})
    history.add("store_counter", 1.0, value=3)
    effects = check_side_effects(history, catalog, distinct_records=2)
    assert (effects.duplicate_files, effects.partial_files, effects.missing_images) == (1, 1, [second.sku])
    assert (effects.deliveries, effects.distinct_keys, effects.duplicate_notifications) == (3, 2, 1)
    assert effects.unnotified == [second.sku]
    assert [finding.value for finding, _ in side_effect_findings(effects)] == [
        "missing_files", "duplicate_files", "missing_webhooks", "duplicate_webhooks", "wrong_counter"]


def test_a_download_a_killed_start_left_half_written_is_removed_and_a_live_one_is_not(tmp_path):
    from killtest.scrapers.effects import remove_dead_downloads, save_image

    name = save_image(str(tmp_path), b"\x89PNG picture")
    assert save_image(str(tmp_path), b"\x89PNG picture") == name and len(os.listdir(tmp_path)) == 1
    dead, live = tmp_path / f"{name}.999999999.tmp", tmp_path / f"{name}.{os.getpid()}.tmp"
    dead.write_bytes(b"half")
    live.write_bytes(b"half")
    remove_dead_downloads(str(tmp_path))
    assert not dead.exists() and live.exists()


@pytest.mark.parametrize("store, design_extra, says", [
    ('kind = "jsonl"\npath = "{work_dir}/r.jsonl"\ncounter = "SELECT 1"\n', "", "store.counter is a query"),
    ('kind = "sqlite"\npath = "{work_dir}/s"\nrecords = "SELECT 1"\n', "side_effects = 1\n",
     "design.side_effects must be true or false"),
])
def test_side_effect_spec_mistakes_are_one_line(store, design_extra, says, tmp_path):
    path = tmp_path / "design.toml"
    path.write_text(f'[design]\nname = "mine"\nmodule = "mine"\n{design_extra}\n[store]\n{store}')
    with pytest.raises(KilltestError, match=says):
        load_spec(str(path))
