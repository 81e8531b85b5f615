"""The report's "Every published column at once": ours beside each of the article's six columns, the runs that
landed in each band, the machine model, and, for the article's seeded schedules, why no rate lands every naive wall."""

from __future__ import annotations

import dataclasses

from killtest.fixture_site.catalog import build_catalog
from killtest.harness.check.verdict import RunVerdict
from killtest.harness.faults.schedule import parse_schedule, timed_schedule
from killtest.harness.report.campaign import Campaign
from killtest.harness.report.sections import report_sections
from killtest.harness.running.campaign_plan import CampaignPlan
from killtest.harness.running.runner import RunSettings

CATALOG = build_catalog(listing_pages=1, products_per_page=2)

ZERO = {f.name: 0 for f in dataclasses.fields(RunVerdict)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}


def verdict(design: str, run: int, rows: int, requests: int, wall_s: float, kills: int = 10) -> RunVerdict:
    figures = ZERO | {"design": design, "run": run, "seed": run, "kills": kills, "kills_planned": 10, "rows": rows,
                      "distinct_records": 500, "correct_records": 500, "requests": requests, "minimum_requests": 525,
                      "duplicate_ratio": rows / 500, "wall_s": wall_s, "outcome": "completed", "startup_s": 0.1,
                      "request_rate": 140.0, "lease_wait_s": 0.0, "categories": {"duplicated": {"extra_rows": 0}}}
    return RunVerdict(**figures)


# What `killtest run --seed 1 --runs 5 --kills 10` writes in its settings: each run's kill delays, summed.
SUMS = [round(sum(p.delay_s for p in timed_schedule(seed).points), 4) for seed in range(1, 6)]
SETTINGS = {"products": 500, "seed": 1, "kills": 10, "kill_delay_s": [0.2, 1.0], "pace_rps": 140.0,
            "health_threshold": 1.25, "disk": "consumer-ssd", "kill_delay_sums_s": SUMS}


def section(settings: dict, naive: list[tuple], idempotent: list[tuple], control: str = "naive"):
    verdicts = [verdict(control, i + 1, *figures) for i, figures in enumerate(naive)]
    verdicts += [verdict("idempotent", i + 1, *figures) for i, figures in enumerate(idempotent)]
    campaign = Campaign(command="killtest run", settings=settings, verdicts=verdicts, controls=[control])
    return next((s for s in report_sections(campaign) if s.title == "Every published column at once"), None)


def test_each_column_counts_the_runs_inside_its_published_band():
    found = section(SETTINGS, naive=[(1286, 1361, 9.2), (2165, 2283, 10.8), (1285, 1400, 10.9)],
                    idempotent=[(500, 535, 7.0), (500, 536, 8.3), (500, 530, 6.7)])
    assert found is not None
    assert found.rows == [
        ["naive", "rows", "1,286–2,165", "1,285–2,165", "2 of 3"],  # 1,285 is one below the lowest published
        ["naive", "requests", "1,361–2,283", "1,361–2,283", "3 of 3"],
        ["naive", "wall s", "9.2–10.8", "9.20–10.90", "2 of 3"],
        ["idempotent", "rows", "500, every one correct", "500", "3 of 3"],
        ["idempotent", "requests", "525–528 (at most 525 + kills)", "530–536", "2 of 3"],  # 536 > 525 + 10
        ["idempotent", "wall s", "6.8–8.3", "6.70–8.30", "2 of 3"],
    ]
    assert found.paragraphs[0] == ("The machine model: the site at most 140 requests/s, the disk model consumer-ssd"
                                   " (docs/explanation/disk-model.md); the control is naive.")
    assert "2 of 6 columns have every run in the published band." in found.bullets


def test_the_reason_comes_from_the_campaigns_own_schedules():
    five = [(1500, 1600, 10.0)] * 5
    found = section(SETTINGS, naive=five, idempotent=[(500, 526, 7.5)] * 5)
    assert max(SUMS) - min(SUMS) > 1.6  # the article's five seeds: wider than the published naive walls
    why = next(p for p in found.bullets if p.startswith("Why not every naive wall"))
    assert f"sum to {min(SUMS):.2f}–{max(SUMS):.2f} s" in why
    # A fixed schedule (no seed) says nothing of kill delays: no reason is made up.
    fixed = section(SETTINGS | {"kill_delay_sums_s": None}, naive=five, idempotent=[(500, 526, 7.5)] * 5)
    assert not any(p.startswith("Why not") for p in fixed.bullets)
    # One run alone spreads nothing.
    one = section(SETTINGS, naive=five[:1], idempotent=[(500, 526, 7.5)])
    assert not any(p.startswith("Why not") for p in one.bullets)


def test_only_the_articles_experiment_gets_the_section():
    assert section(SETTINGS | {"products": 15}, naive=[(20, 30, 1.0)], idempotent=[(15, 18, 1.0)]) is None
    assert section(SETTINGS, naive=[], idempotent=[(500, 526, 7.5)]) is None
    pages = section(SETTINGS | {"disk": None}, naive=[(1500, 1700, 10.0)], idempotent=[(500, 526, 7.5)],
                    control="naive-page-commit")
    assert pages is not None and pages.rows[0][0] == "naive-page-commit"
    assert "this machine's own disk; the control is naive-page-commit." in pages.paragraphs[0]


def test_a_seeded_timed_campaign_records_each_runs_kill_delay_sum_and_an_exact_one_none():

    def settings(schedules, seed):
        plan = CampaignPlan(command="killtest run", designs=(), schedules=tuple(schedules), catalog=CATALOG,
                            settings=RunSettings(), out_dir="results", name="killtest", seed=seed)
        return plan.describe()["kill_delay_sums_s"]

    assert settings([timed_schedule(s) for s in range(1, 6)], seed=1) == SUMS
    assert settings([parse_schedule("r5,t0.4")], seed=None) is None


def test_the_closest_model_is_named_only_while_a_column_is_missed():
    missed = section(SETTINGS, naive=[(1000, 1100, 10.0)], idempotent=[(500, 526, 7.5)])
    assert any('CONTROL=naive-page-commit MODEL="--pace 300 --disk consumer-ssd"' in b for b in missed.bullets)
    every = section(SETTINGS, naive=[(1500, 1600, 10.0)], idempotent=[(500, 526, 7.5)])
    assert "6 of 6 columns have every run in the published band." in every.bullets
    assert not any("closest model" in b for b in every.bullets)
