"""Network faults: the site injects them by seed, the history records them, the checker reads them."""

import pytest
import requests

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.fixture_site.toxics import ToxicDice, ToxicSpecError, parse_toxics, registry
from killtest.harness.check.categories import fetched_twice_by_one_start
from killtest.harness.check.checker import check_run
from killtest.harness.check.network_faults import early_after_throttle
from killtest.harness.design.registry import design_named
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.history import History
from killtest.harness.running.runner import RunSettings, run_kill_test

ALL_FAULTS = "error=0.05,throttle=0.04,reset=0.04,truncate=0.04,timeout=0.02,hold=0.3,latency=0.001,jitter=0.001"


def test_a_toxics_spec_round_trips_and_every_mistake_is_one_line():
    toxics = parse_toxics("throttle=0.1,error=0.2,retry_after=2,only=/product/")
    assert toxics.rates == (("error", 0.2), ("throttle", 0.1)) and toxics.setting("retry_after") == 2
    assert parse_toxics(toxics.spec) == toxics
    for bad, says in [("boom=0.1", "bad toxic 'boom=0.1'"), ("error=2", "a rate is between 0 and 1"),
                      ("error=0.6,reset=0.6", "add up to 1.2"), ("latency=soon", "takes a number"),
                      ("only=product", "path prefix")]:
        with pytest.raises(ToxicSpecError, match=says):
            parse_toxics(bad)


def test_every_toxic_is_registered_in_the_dices_order():
    assert [toxic.name for toxic in registry()] == ["latency", "error", "throttle", "reset", "truncate", "timeout"]
    assert [toxic.order for toxic in registry()] == sorted({toxic.order for toxic in registry()})
    assert all(toxic.description and "\n" not in toxic.description for toxic in registry())


@pytest.mark.parametrize("toxic", registry(), ids=lambda toxic: toxic.name)
def test_each_toxic_parses_and_its_spec_round_trips(toxic):
    # Each setting a little off its default, so that the spec has to carry it.
    settings = [f"{name}={setting.default + 3:g}" for name, setting in toxic.settings.items()]
    toxics = parse_toxics(",".join(([f"{toxic.name}=0.25"] if toxic.rated else []) + settings))
    assert toxics.active
    assert toxics.rates == (((toxic.name, 0.25),) if toxic.rated else ())
    for name, setting in toxic.settings.items():
        assert toxics.setting(name) == setting.default + 3
    assert parse_toxics(toxics.spec) == toxics
    assert parse_toxics(toxics.spec).spec == toxics.spec


def test_a_setting_at_its_default_is_the_same_toxics_as_none_given():
    assert parse_toxics("throttle=0.1,retry_after=1") == parse_toxics("throttle=0.1")
    assert parse_toxics("throttle=0.1").spec == "throttle=0.1,retry_after=1"
    assert not parse_toxics("latency=0,jitter=0").active and parse_toxics("jitter=0.1").active


def test_the_dice_give_the_faults_and_delays_they_always_gave():
    """Pinned from the rolls before toxics became a family: a seed must keep meaning the same faults."""
    dice = ToxicDice(parse_toxics("error=0.1,throttle=0.1,reset=0.1,truncate=0.1,timeout=0.1,latency=0.01,"
                                  "jitter=0.005"), 3)
    rolls = [dice.roll(f"/product/{i % 4}") for i in range(40)]
    assert " ".join((fault or "-")[:2] for fault, _ in rolls) == (
        "- - er re - - - - tr re th - - - tr ti - - re er th - - - - er ti - - - er - - re tr th th - re -")
    assert round(sum(delay for _, delay in rolls), 9) == 0.418174607


def test_the_nth_request_for_a_path_meets_the_same_fault_for_the_same_seed():
    toxics = parse_toxics("error=0.1,reset=0.1,truncate=0.1")
    first, again, other = ToxicDice(toxics, 3), ToxicDice(toxics, 3), ToxicDice(toxics, 4)
    paths = [f"/product/{i % 50}" for i in range(2000)]
    rolls = [first.roll(p)[0] for p in paths]
    assert rolls == [again.roll(p)[0] for p in paths] != [other.roll(p)[0] for p in paths]
    for kind in ("error", "reset", "truncate"):
        assert 140 < rolls.count(kind) < 260  # 10% of 2,000, by this seed
    only = ToxicDice(parse_toxics("error=1,only=/product/"), 1)
    assert only.roll("/list/0")[0] is None and only.roll("/product/0")[0] == "error"


def test_each_fault_reaches_a_real_client_as_a_real_network_would_deliver_it():
    with SiteServer(build_catalog(2, 3)) as site:
        session = requests.Session()
        url = site.base_url + "/product/1"
        for spec in ("reset=1", "timeout=1,hold=0.2"):
            site.set_toxics(parse_toxics(spec), 1)
            with pytest.raises(requests.ConnectionError):
                session.get(url, timeout=30)
        site.set_toxics(parse_toxics("error=1"), 1)
        assert session.get(url, timeout=30).status_code == 503
        site.set_toxics(parse_toxics("throttle=1,retry_after=7"), 1)
        assert session.get(url, timeout=30).headers["Retry-After"] == "7"
        site.set_toxics(parse_toxics("truncate=1"), 1)
        cut = session.get(url, timeout=30)
        site.set_toxics(None)
        whole = session.get(url, timeout=30)  # the same session: a dropped connection is replaced
        assert cut.status_code == 200 and whole.text.startswith(cut.text) and len(cut.text) == len(whole.text) // 2
        assert [(r.status, r.fault) for r in site.request_log.snapshot()] == [
            (0, "reset"), (0, "timeout"), (503, "error"), (429, "throttle"), (200, "truncate"), (200, None)]


@pytest.mark.fault("toxics")
def test_the_idempotent_design_retries_every_fault_safely_under_kills(tmp_path):
    design = design_named("idempotent")
    with SiteServer(build_catalog(4, 10, seed=5)) as site:
        site.set_toxics(parse_toxics(ALL_FAULTS), 11)
        history = run_kill_test(design, parse_schedule("r9,r17,r5"), site, str(tmp_path),
                                RunSettings(lease_s=1.0, time_limit_s=60))
        verdict = check_run(design, 1, history, site.catalog)
    assert verdict.faulted_requests > 0 and verdict.retries > 0, verdict.faults
    assert verdict.valid, verdict.problems  # one correct row each, requests <= 44 + kills + faults
    assert verdict.rows == verdict.correct_records == 40


def test_the_naive_design_gives_up_at_the_first_error_page(tmp_path):
    design = design_named("naive")
    with SiteServer(build_catalog(4, 10, seed=5)) as site:
        site.set_toxics(parse_toxics("error=1,only=/product/3"), 1)  # /product/3 and /product/30..39
        verdict = check_run(design, 1, run_kill_test(design, parse_schedule(""), site, str(tmp_path),
                                                     RunSettings(time_limit_s=60)), site.catalog)
    # The control promises nothing, so its lost records are figures, not findings; its crash is a finding.
    assert "crashed" in verdict.findings and verdict.missing_records >= 1
    assert verdict.faults == {"error": 1} and verdict.lost_after_fault == 1


def _history(requests, toxics="throttle=0.1,retry_after=1"):
    history = History()
    history.add("run_started", 0.0, toxics=toxics)
    for t, path, status, fault in requests:
        history.add("request", t, path=path, status=status, start=0, **({"fault": fault} if fault else {}))
    return history


def test_a_request_sooner_than_retry_after_is_counted_and_one_in_flight_or_after_it_is_not():
    history = _history([(1.0, "/a", 429, "throttle"), (1.02, "/b", 200, None), (1.4, "/c", 200, None),
                        (2.0, "/a", 200, None)])
    assert early_after_throttle(history) == 1  # /c at 1.4: Retry-After asked for 1 s
    assert early_after_throttle(_history([(1.0, "/a", 429, "throttle"), (2.0, "/a", 200, None)])) == 0


def test_a_second_fetch_after_a_fault_is_a_retry_not_a_lease_that_ran_out():
    assert fetched_twice_by_one_start(_history([(1.0, "/a", 503, "error"), (1.2, "/a", 200, None)])) == []
    assert fetched_twice_by_one_start(_history([(1.0, "/a", 200, None), (1.2, "/a", 200, None)])) == ["/a"]
