"""Write a campaign's results: JSON for machines, Markdown beside the published table, a PNG plot."""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass, field

from harness.checker import RunVerdict
from harness.files import write_atomically
from harness.published import (KILLS_PER_RUN, PRODUCTS, PUBLISHED_NAIVE_ROWS_PER_PRODUCT, PUBLISHED_RUNS, PUBLISHED_WALL_S,
                               published_run)

# Which columns of the article's table belong to which shipped design.
PUBLISHED_COLUMNS = {"naive": ("naive_rows", "naive_requests"),
                     "idempotent": ("idempotent_rows", "idempotent_requests")}


@dataclass
class Campaign:
    """Everything one `killtest run` produced so far; `complete` is False until the last run is checked."""

    command: str
    settings: dict
    verdicts: list[RunVerdict] = field(default_factory=list)
    comparison_problems: list[str] = field(default_factory=list)
    complete: bool = False
    interrupted: bool = False

    @property
    def valid(self) -> bool:
        return all(v.valid for v in self.verdicts) and not self.comparison_problems

    def designs(self) -> list[str]:
        return list(dict.fromkeys(v.design for v in self.verdicts))

    def of_design(self, design: str) -> list[RunVerdict]:
        return [v for v in self.verdicts if v.design == design]


def summarise(campaign: Campaign) -> dict:
    """Per-design ranges and medians, and where the naive control falls against the published band."""
    summary = {}
    for design in campaign.designs():
        runs = campaign.of_design(design)
        startups = [v.startup_s for v in runs if v.startup_s is not None]
        rates = [v.request_rate for v in runs if v.request_rate is not None]
        summary[design] = {
            "runs": len(runs),
            "rows_per_product": [min(v.duplicate_ratio for v in runs), max(v.duplicate_ratio for v in runs)],
            "requests": [min(v.requests for v in runs), max(v.requests for v in runs)],
            "wall_s": [min(v.wall_s for v in runs), max(v.wall_s for v in runs)],
            "published_wall_s": list(PUBLISHED_WALL_S[design]) if design in PUBLISHED_WALL_S else None,
            "median_startup_s": round(statistics.median(startups), 4) if startups else None,
            "median_request_rate": round(statistics.median(rates), 1) if rates else None,
            "kills": sum(v.kills for v in runs),
            "kills_planned": sum(v.kills_planned for v in runs),
            "kills_not_delivered": sum(v.kills_not_delivered for v in runs),
            "kills_before_first_request": sum(v.kills_before_first_request for v in runs),
            "kills_between_lease_and_commit": sum(v.kills_between_lease_and_commit for v in runs),
            "kills_during_lease_wait": sum(v.kills_during_lease_wait for v in runs),
            "lease_wait_s": round(sum(v.lease_wait_s for v in runs), 3),
            "valid_runs": sum(v.valid for v in runs),
        }
    if "naive" in summary:
        summary["naive"]["band_gap"] = naive_band_gap(summary["naive"]["rows_per_product"])
    return summary


def naive_band_gap(ours: list[float]) -> dict:
    """How far our naive rows-per-product range lies from the article's 2.6-4.3, in rows per product."""
    low, high = PUBLISHED_NAIVE_ROWS_PER_PRODUCT
    below = round(max(0.0, low - ours[0]), 2)
    above = round(max(0.0, ours[1] - high), 2)
    inside = ours[0] >= low and ours[1] <= high
    overlaps = ours[1] >= low and ours[0] <= high
    return {"published": [low, high], "ours": ours, "inside": inside, "overlaps": overlaps,
            "lowest_below_band_by": below, "highest_above_band_by": above}


def to_json(campaign: Campaign) -> dict:
    return {"command": campaign.command, "settings": campaign.settings, "complete": campaign.complete,
            "interrupted": campaign.interrupted, "valid": campaign.valid,
            "runs": [v.to_json() for v in campaign.verdicts],
            "comparison_problems": campaign.comparison_problems,
            "summary": summarise(campaign) if campaign.verdicts else {}}


def write_results(campaign: Campaign, out_dir: str, name: str, plot: bool = True) -> list[str]:
    """JSON, Markdown and (when asked) PNG, each replaced whole so a reader never sees half a file."""
    base = os.path.join(out_dir, name)
    write_atomically(f"{base}.json", json.dumps(to_json(campaign), indent=2) + "\n")
    write_atomically(f"{base}.md", markdown(campaign, f"{name}.png" if plot else None))
    written = [f"{base}.json", f"{base}.md"]
    if plot and campaign.verdicts:
        from harness.plot import plot_campaign  # matplotlib is slow to import; only when a plot is wanted
        plot_campaign(campaign, f"{base}.png")
        written.append(f"{base}.png")
    return written


def _n(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return f"{value:,}"


def markdown(campaign: Campaign, plot_file: str | None) -> str:
    lines = ["# killtest results", "",
             f"Command: `{campaign.command}`", ""]
    if not campaign.complete:
        lines += ["**Incomplete:** the campaign was interrupted; only the runs below finished.", ""]
    lines += [f"Verdict: **{'PASS' if campaign.valid else 'FAIL'}**", ""]
    if not campaign.verdicts:
        return "\n".join(lines) + "\n"
    lines += _side_by_side(campaign) + _summary_table(campaign) + _naive_band_section(campaign)
    lines += _problems(campaign)
    if plot_file:
        lines += ["", f"![rows and requests per run]({plot_file})"]
    return "\n".join(lines) + "\n"


def _side_by_side(campaign: Campaign) -> list[str]:
    designs = campaign.designs()
    header = ["Run", "Seed"]
    for d in designs:
        header += [f"{d}: rows", f"{d}: requests", f"{d}: wall s"]
    lines = ["## Run by run, ours beside the article's", "",
             "Each cell is *ours (published)*; the article gives no per-run wall times.", "",
             "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    runs = sorted({v.run for v in campaign.verdicts})
    for run in runs:
        published = published_run(run)
        row = [str(run)]
        seeds = {v.seed for v in campaign.verdicts if v.run == run}
        row.append(", ".join(str(s) for s in sorted(seeds)))
        for d in designs:
            v = next((v for v in campaign.of_design(d) if v.run == run), None)
            columns = PUBLISHED_COLUMNS.get(d)
            pub_rows = getattr(published, columns[0]) if published and columns else None
            pub_requests = getattr(published, columns[1]) if published and columns else None
            row += [_with_published(v.rows if v else None, pub_rows),
                    _with_published(v.requests if v else None, pub_requests),
                    _n(v.wall_s if v else None)]
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


def _with_published(ours, published) -> str:
    return _n(ours) if published is None else f"{_n(ours)} ({published:,})"


def _summary_table(campaign: Campaign) -> list[str]:
    summary = summarise(campaign)
    header = ["Design", "rows per product", "requests", "wall s (published)", "start-up s (median)",
              "requests/s while crawling", "kills landed / planned", "before first request",
              "between lease and commit", "during a lease wait", "not delivered (crawl done)", "valid runs"]
    lines = ["## Per design", "", "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for design, s in summary.items():
        wall = f"{_n(s['wall_s'][0])}–{_n(s['wall_s'][1])}"
        if s["published_wall_s"]:
            wall += f" ({s['published_wall_s'][0]}–{s['published_wall_s'][1]})"
        lines.append("| " + " | ".join([
            design, f"{s['rows_per_product'][0]:.2f}–{s['rows_per_product'][1]:.2f}",
            f"{s['requests'][0]:,}–{s['requests'][1]:,}", wall, _n(s["median_startup_s"]),
            _n(s["median_request_rate"]), f"{s['kills']} / {s['kills_planned']}",
            str(s["kills_before_first_request"]), str(s["kills_between_lease_and_commit"]),
            str(s["kills_during_lease_wait"]),
            str(s["kills_not_delivered"]), f"{s['valid_runs']} / {s['runs']}"]) + " |")
    return lines + [""]


def _naive_band_section(campaign: Campaign) -> list[str]:
    summary = summarise(campaign)
    if "naive" not in summary:
        return []
    s = summary["naive"]
    gap = s["band_gap"]
    low, high = gap["published"]
    ours = f"{gap['ours'][0]:.2f}–{gap['ours'][1]:.2f}"
    if gap["inside"]:
        where = f"inside the published band {low}–{high}"
    elif gap["overlaps"]:
        where = f"overlapping the published band {low}–{high}"
    else:
        where = f"outside the published band {low}–{high}"
    lines = ["## The naive control against the published band", "",
             f"Ours: {ours} rows per product, {where}"
             f" (lowest run {gap['lowest_below_band_by']:.2f} below the band,"
             f" highest {gap['highest_above_band_by']:.2f} above it)."]
    delays = campaign.settings.get("kill_delay_s", [0.2, 1.0])
    startup, rate = s["median_startup_s"], s["median_request_rate"]
    if startup is not None and rate:
        mean_delay = (delays[0] + delays[1]) / 2
        crawling = max(0.0, mean_delay - startup)
        lines += ["", "Why: a killed naive start stores about (mean kill delay − start-up) × request rate rows."
                  f" Here that is ({mean_delay:.2f} s − {startup:.2f} s) × {rate:.0f}/s ≈ {crawling * rate:.0f}"
                  f" requests per killed start; {s['kills_before_first_request']} of {s['kills']} kills landed"
                  f" before the start made any request. The article's figures imply"
                  f" {_published_rows_per_killed_start()} rows per killed start. Start-up (interpreter and `import requests`) and the request rate decide"
                  " the gap; site latency only lowers the rate."]
    return lines + [""]


def _published_rows_per_killed_start() -> str:
    extra = sorted((r.naive_rows - PRODUCTS) / KILLS_PER_RUN for r in PUBLISHED_RUNS)
    return f"{extra[0]:.0f}–{extra[-1]:.0f}"


def _problems(campaign: Campaign) -> list[str]:
    lines = ["## Checks", ""]
    for v in campaign.verdicts:
        status = "ok" if v.valid else "FAIL: " + "; ".join(v.problems)
        lines.append(f"- {v.design} run {v.run} (seed {v.seed}): {status}")
    for problem in campaign.comparison_problems:
        lines.append(f"- comparison FAIL: {problem}")
    return lines
