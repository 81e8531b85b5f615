"""The report's content as plain data (titles, paragraphs, tables), rendered to Markdown and HTML alike."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from killtest.harness.check.baseline import diff_table
from killtest.harness.check.health import health_limit, perfect_words
from killtest.harness.defaults import HEALTH_THRESHOLD
from killtest.harness.published import (
    FULL_CRAWL_REQUESTS,
    KILLS_PER_RUN,
    PRODUCTS,
    PUBLISHED_RUNS,
    PUBLISHED_WALL_S,
    published_run,
)
from killtest.harness.report.campaign import PUBLISHED_COLUMNS, Campaign, summarise
from killtest.harness.report.crash_states import PHASES_INTRO, PHASES_TITLE, section_rows
from killtest.harness.report.replay_lines import replay_clauses
from killtest.harness.report.start_pace import pace_bullets
from killtest.harness.report.triage import run_failure_bullets, run_failures


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)


def report_sections(campaign: Campaign) -> list[Section]:
    if not campaign.verdicts:
        return []
    phases = Section(PHASES_TITLE, [PHASES_INTRO], *section_rows(campaign.verdicts))  # where the kills landed
    return [s for s in (_distinct_failures(campaign), _side_by_side(campaign), _per_design(campaign),
                        phases if phases.rows else None, _categories(campaign),
                        _health(campaign), _naive_band(campaign), _every_column(campaign),
                        _against_baseline(campaign), _start_pace(campaign), _checks(campaign))
            if s is not None]


def _distinct_failures(campaign: Campaign) -> Section | None:
    """Each distinct failure once (harness/check/distinct.py), first: what a reader must look at."""
    failures = run_failures(campaign.verdicts)
    if not failures:
        return None
    replays = campaign.settings.get("replays") or {}
    return Section(f"Distinct failures ({len(failures)})", [runs_line(campaign) + "."],
                   bullets=run_failure_bullets(failures,
                                               lambda design, b: replay_of(replays, design, int(b.point[3:]))))


def runs_line(campaign: Campaign) -> str:
    """`5 runs, 1 failed, 1 proved nothing, 1 distinct failure`: the figures every output opens with, the
    runs that proved nothing (no kill landed) named whenever there are some, since they fail a campaign too."""
    runs, failures = len(campaign.verdicts), len(run_failures(campaign.verdicts))
    nothing = campaign.proved_nothing_runs
    return (f"{runs} run{'s' if runs != 1 else ''}, {campaign.failed_runs} failed"
            + (f", {nothing} proved nothing (no kill landed on a start at work)" if nothing else "")
            + f", {failures} distinct failure{'s' if failures != 1 else ''}")


def number(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return f"{value:,}"


def _with_published(ours, published) -> str:
    return number(ours) if published is None else f"{number(ours)} ({published:,})"


def _side_by_side(campaign: Campaign) -> Section:
    designs = campaign.designs()
    compared = any(d in PUBLISHED_COLUMNS for d in designs)
    section = Section("Run by run, ours beside the article's" if compared else "Run by run",
                      ["Each cell is *ours (published)*; the article gives no per-run wall times."] if compared else [],
                      header=["Run", "Seed"] + [f"{d}: {c}" for d in designs for c in ("rows", "requests", "wall s")])
    for run in sorted({v.run for v in campaign.verdicts}):
        published = published_run(run)
        seeds = sorted({v.seed for v in campaign.verdicts if v.run == run})
        row = [str(run), ", ".join(map(str, seeds))]
        for d in designs:
            v = next((v for v in campaign.of_design(d) if v.run == run), None)
            columns = PUBLISHED_COLUMNS.get(d)
            pub_rows = getattr(published, columns[0]) if published and columns else None
            pub_requests = getattr(published, columns[1]) if published and columns else None
            row += [_with_published(v.rows if v else None, pub_rows),
                    _with_published(v.requests if v else None, pub_requests), number(v.wall_s if v else None)]
        section.rows.append(row)
    return section


def _per_design(campaign: Campaign) -> Section:
    section = Section("Per design", header=[
        "Design", "rows per product", "requests",
        "wall s (published)" if any(s["published_wall_s"] for s in summarise(campaign).values()) else "wall s",
        "start-up s (median)",
        "requests/s while crawling", "kills landed / planned", "before work", "between lease and commit",
        "during a lease wait", "not delivered (crawl done)", "valid runs"])
    for design, s in summarise(campaign).items():
        wall = f"{number(s['wall_s'][0])}–{number(s['wall_s'][1])}"
        if s["published_wall_s"]:
            wall += f" ({s['published_wall_s'][0]}–{s['published_wall_s'][1]})"
        section.rows.append([
            design, f"{s['rows_per_product'][0]:.2f}–{s['rows_per_product'][1]:.2f}",
            f"{s['requests'][0]:,}–{s['requests'][1]:,}", wall, number(s["median_startup_s"]),
            number(s["median_request_rate"]), f"{s['kills']} / {s['kills_planned']}", str(s["kills_before_work"]),
            str(s["kills_between_lease_and_commit"]), str(s["kills_during_lease_wait"]),
            str(s["kills_not_delivered"]), f"{s['valid_runs']} / {s['runs']}"])
    return section


def _categories(campaign: Campaign) -> Section:
    section = Section("Records and kills by category, all runs", [
        "Lost: on the site, missing from the store after a crawl that finished, or after a start that crashed"
        " (the crawler exited with an error before storing them). Not stored: missing when the"
        " time limit or a no-progress stop ended the crawl (a liveness finding, never counted as lost)."
        " Duplicated: stored more than once. Unexpected: a value the site"
        " never showed, or a record not on the site. In flight: the pages a start was working on when it was"
        " killed (newly leased ones, for a design with leases; else its last request), whose outcome was"
        " unknown at the kill; recovered: a later start fetched them again. A kill landed when"
        " the kernel reported signal 9 on a start that had begun work."],
        header=["Design", "lost", "not stored (crawl unfinished)", "duplicated records (extra rows)", "unexpected",
                "in flight at a kill", "recovered", "kills landed", "before work", "missed", "not delivered"])
    for design in campaign.designs():
        runs = campaign.of_design(design)

        def total(name: str, runs: list = runs) -> int:
            return sum(getattr(v, name) for v in runs)
        extra = sum(v.categories["duplicated"]["extra_rows"] for v in runs)
        section.rows.append([design, str(total("missing_records")), str(total("not_stored_unfinished")),
                             f"{total('duplicated_records')} ({extra:,})",
                             str(total("unexpected_records")), str(total("in_flight_at_kills")),
                             str(total("recovered")), str(total("kills")), str(total("kills_before_work")),
                             str(total("kills_missed")), str(total("kills_not_delivered"))])
    return section


def _published_rows_per_killed_start() -> str:
    extra = sorted((r.naive_rows - PRODUCTS) / KILLS_PER_RUN for r in PUBLISHED_RUNS)
    return f"{extra[0]:.0f}–{extra[-1]:.0f}"


def _pace(pace_rps) -> str:
    return f"at most {pace_rps:g} requests/s" if pace_rps else "unpaced"


def _naive_band(campaign: Campaign) -> Section | None:
    summary = summarise(campaign)
    control = next((name for name in campaign.controls if name in summary), None)
    if control is None:
        return None
    s = summary[control]
    gap = s["band_gap"]
    low, high = gap["published"]
    where = "inside" if gap["inside"] else "overlapping" if gap["overlaps"] else "outside"
    section = Section("The naive control against the published band", [
        f"Ours: {gap['ours'][0]:.2f}–{gap['ours'][1]:.2f} rows per product, {where} the published band"
        f" {low}–{high} (lowest run {gap['lowest_below_band_by']:.2f} below the band,"
        f" highest {gap['highest_above_band_by']:.2f} above it)."])
    delays = campaign.settings.get("kill_delay_s")  # None for exact schedules, where the timed model says nothing
    startup, rate = s["median_startup_s"], s["median_request_rate"]
    if delays and startup is not None and rate:
        mean_delay = (delays[0] + delays[1]) / 2
        per_kill = max(0.0, mean_delay - startup) * rate
        section.paragraphs.append(
            "Why: a killed naive start stores about (mean kill delay − start-up) × request rate rows."
            f" Here that is ({mean_delay:.2f} s − {startup:.2f} s) × {rate:.0f}/s ≈ {per_kill:.0f} requests per"
            f" killed start; {s['kills_before_work']} of {s['kills'] + s['kills_before_work']} SIGKILLs landed"
            f" before the start made any request. The article's figures imply {_published_rows_per_killed_start()}"
            " rows per killed start. Start-up (interpreter and `import requests`) and the request rate decide the"
            f" gap; the site's pace ({_pace(campaign.settings.get('pace_rps'))}) caps the rate"
            + (f", and every flush costs what the disk model {campaign.settings['disk']} says"
               " (docs/explanation/disk-model.md)." if campaign.settings.get("disk") else "."))
    return section


def _every_column(campaign: Campaign) -> Section | None:
    """The article's six columns at once: ours beside each published band, with the runs that landed in it,
    and the machine model the campaign ran on. When a timed campaign's schedules make one column
    unreachable whatever the model, the reason, from those schedules."""
    summary = summarise(campaign)
    control = next((name for name in campaign.controls if name in summary and name in PUBLISHED_COLUMNS), None)
    if control is None or "idempotent" not in summary or campaign.settings.get("products") != PRODUCTS:
        return None
    ours, theirs = campaign.of_design(control), campaign.of_design("idempotent")
    rows, requests = ([getattr(r, c) for r in PUBLISHED_RUNS] for c in PUBLISHED_COLUMNS["naive"])
    fetched = [getattr(r, PUBLISHED_COLUMNS["idempotent"][1]) for r in PUBLISHED_RUNS]
    naive_wall, idempotent_wall = PUBLISHED_WALL_S["naive"], PUBLISHED_WALL_S["idempotent"]
    # (design, column, published, its runs' figures, whether a run is in the band)
    columns: list[tuple[str, str, str, list[float], Callable[[Any], bool]]] = [
        (control, "rows", f"{min(rows):,}–{max(rows):,}", [v.rows for v in ours],
         lambda v: min(rows) <= v.rows <= max(rows)),
        (control, "requests", f"{min(requests):,}–{max(requests):,}", [v.requests for v in ours],
         lambda v: min(requests) <= v.requests <= max(requests)),
        (control, "wall s", f"{naive_wall[0]}–{naive_wall[1]}", [v.wall_s for v in ours],
         lambda v: naive_wall[0] <= v.wall_s <= naive_wall[1]),
        ("idempotent", "rows", f"{PRODUCTS}, every one correct", [v.rows for v in theirs],
         lambda v: v.rows == v.correct_records == PRODUCTS),
        ("idempotent", "requests", f"{min(fetched)}–{max(fetched)} (at most {FULL_CRAWL_REQUESTS} + kills)",
         [v.requests for v in theirs],
         lambda v: v.requests <= v.minimum_requests + v.kills),
        ("idempotent", "wall s", f"{idempotent_wall[0]}–{idempotent_wall[1]}", [v.wall_s for v in theirs],
         lambda v: idempotent_wall[0] <= v.wall_s <= idempotent_wall[1]),
    ]
    section = Section("Every published column at once", [_machine_model(campaign, control)],
                      header=["Design", "column", "published", "ours", "runs in the band"])
    landed = 0
    for design, column, published, figures, inside in columns:
        runs = ours if design == control else theirs
        hits = sum(1 for v in runs if inside(v))
        landed += hits == len(runs)
        low, high = number(min(figures)), number(max(figures))
        section.rows.append([design, column, published, low if low == high else f"{low}–{high}",
                             f"{hits} of {len(runs)}"])
    section.bullets.append(f"{landed} of {len(columns)} columns have every run in the published band.")
    spread = _kill_delay_sums(campaign, ours)
    if spread is not None and spread[1] - spread[0] > naive_wall[1] - naive_wall[0]:
        section.bullets.append(
            f"Why not every naive wall: a killed start is restarted at once, so a naive run lasts about the sum of its"
            f" ten kill delays, plus its start-ups, plus a whole crawl at its rate. This campaign's schedules sum to"
            f" {spread[0]:.2f}–{spread[1]:.2f} s, a spread of {spread[1] - spread[0]:.2f} s, wider than the published"
            f" band's {naive_wall[1] - naive_wall[0]:.1f} s: no one crawl rate, so no disk or pace, puts all of them in"
            f" {naive_wall[0]}–{naive_wall[1]} s.")
    if landed < len(columns):
        section.bullets.append(
            f"The closest model measured is `{CLOSEST_MODEL}` (in the repository, `make killtest {CLOSEST_MAKE}`);"
            " it reads the article's \"commits as it goes\" as a commit per listing page, which the published"
            " requests column rules out, so it is not the default (docs/explanation/article-reproduction.md).")
    return section


# The nearest any campaign came to all six columns (docs/explanation/article-reproduction.md, measured there).
CLOSEST_MODEL = ("killtest run --design naive-page-commit --design idempotent --runs 5 --kills 10 --seed 1 --lease 3"
                 " --pace 300 --disk consumer-ssd")
CLOSEST_MAKE = 'CONTROL=naive-page-commit MODEL="--pace 300 --disk consumer-ssd"'


def _machine_model(campaign: Campaign, control: str) -> str:
    """The machine the campaign pretended to run on, in one sentence."""
    settings = campaign.settings
    disk = settings.get("disk")
    return (f"The machine model: the site {_pace(settings.get('pace_rps'))}, "
            + (f"the disk model {disk} (docs/explanation/disk-model.md)" if disk else "this machine's own disk")
            + f"; the control is {control}.")


def _kill_delay_sums(campaign: Campaign, runs: list) -> tuple[float, float] | None:
    """The lowest and highest sum of a run's kill delays, for a campaign of seeded timed schedules."""
    sums = campaign.settings.get("kill_delay_sums_s")
    if not sums or not runs:
        return None
    mine = [sums[v.run - 1] for v in runs if 0 < v.run <= len(sums)]
    return (min(mine), max(mine)) if mine else None


def _against_baseline(campaign: Campaign) -> Section | None:
    if not campaign.baseline_diffs:
        return None
    section = Section("Against the baseline", [
        "Each design's figures over all its runs, beside the saved campaign's. WORSE fails the run; a"
        " control's rows and repeated requests move with the machine's load, so they are shown, not judged."],
        header=["Design", "figure", "baseline", "this run", "verdict"], rows=diff_table(campaign.baseline_diffs))
    section.bullets = [f"REGRESSION: {r}" for r in campaign.regressions]
    return section


def _health(campaign: Campaign) -> Section:
    """The article's health metric, run by run, and the runs above the threshold (warnings, not failures)."""
    designs, threshold = campaign.designs(), float(campaign.settings.get("health_threshold") or HEALTH_THRESHOLD)
    full, products = campaign.settings.get("full_crawl_requests", 525), campaign.settings.get("products", 500)
    limit = health_limit(threshold, full, products)
    section = Section("Health: requests per stored record", [
        "Requests per distinct stored record and crawl, the article's cheap health metric: a perfect crawl of"
        f" this shop is {perfect_words(full, products)} (listing pages and products over products); killtest warns"
        f" above {limit:g}" + ("." if limit == threshold else f" ({threshold:g} for the article's 1.05, scaled).")],
        header=["Run"] + designs)
    for run in sorted({v.run for v in campaign.verdicts}):
        cells = [next((number(v.requests_per_record) for v in campaign.of_design(d) if v.run == run), "–")
                 for d in designs]
        section.rows.append([str(run)] + cells)
    section.bullets = list(campaign.health_warnings)
    return section


def _start_pace(campaign: Campaign) -> Section | None:
    """The pace measured before the killed runs, and what each stopped or stalled start said (report/start_pace.py)."""
    bullets = pace_bullets(campaign)
    return Section("What the starts said, and their pace", bullets=bullets) if bullets else None


def replay_of(replays: dict, design: str, run: int) -> str | None:
    """The `killtest replay` line of one run, when the command that planned it gave one."""
    lines = replays.get(design) or []
    return lines[run - 1] if 0 < run <= len(lines) else None


def _checks(campaign: Campaign) -> Section:
    section = Section("Checks")
    replays = campaign.settings.get("replays") or {}
    for v in campaign.verdicts:
        status = "ok" if v.valid else "FAIL: " + "; ".join(v.problems)
        seed = f" (seed {v.seed})" if v.seed is not None else ""
        said = replay_clauses(replay_of(replays, v.design, v.run), v)
        section.bullets.append(f"{v.design} run {v.run}{seed}: {status}{said}")
    section.bullets += [f"comparison: {figure}" for figure in campaign.comparison_figures]
    section.bullets += [f"comparison FAIL: {problem}" for problem in campaign.comparison_problems]
    return section
