"""Write a campaign's results: JSON for machines, Markdown and HTML beside the published table, PNG plots."""

from __future__ import annotations

import importlib.util
import json
import os
import sys

from killtest.harness.check.verdict import RunVerdict
from killtest.harness.files import write_atomically
from killtest.harness.history import History
from killtest.harness.report.campaign import Campaign, to_json
from killtest.harness.report.pasted import for_page
from killtest.harness.report.render import markdown, summary_page


def history_dir(out_dir: str) -> str:
    """The folder of a campaign's histories: made by the campaign that writes them, not before."""
    return os.path.join(out_dir, "history")


def history_path(out_dir: str, name: str, design: str, run: int) -> str:
    return os.path.join(history_dir(out_dir), f"{name}-{design}-run{run}.jsonl")


def timeline_runs(campaign: Campaign) -> list:
    """Each design's first run and every run with a finding, in campaign order."""
    first: dict[str, RunVerdict] = {}
    for v in campaign.verdicts:
        first.setdefault(v.design, v)
    return [v for v in campaign.verdicts if v is first[v.design] or not v.valid]


def write_json(campaign: Campaign, out_dir: str, name: str) -> str:
    path = os.path.join(out_dir, f"{name}.json")
    write_atomically(path, json.dumps(to_json(campaign), indent=2) + "\n")
    return path


def plotting_installed() -> bool:
    """Whether the `plot` extra (matplotlib) is installed: plots are optional, the verdicts are not."""
    return importlib.util.find_spec("matplotlib") is not None


def kinds_written(plot: bool, page: bool = True) -> list[str]:
    """The extensions of the files `write_results` writes as NAME.*, in the order the results line names them."""
    plotted = plot and plotting_installed()
    return ["json", "md", *(["html"] if plotted or page else []), *(["png"] if plotted else [])]


def write_results(campaign: Campaign, out_dir: str, name: str, plot: bool = True,
                  all_timelines: bool = False, page: bool = False) -> list[str]:
    """JSON, Markdown and (when asked) the plots, and the HTML page with them or when `page` asks for it
    (`run`: the triage page, with or without matplotlib), each file replaced whole.

    A timeline is drawn for each design's first run and for every run that broke a promise, or for
    every run with `all_timelines`: at a quarter of a second each, drawing them all was most of the
    harness's own time in `make killtest`.
    """
    base = os.path.join(out_dir, name)
    write_json(campaign, out_dir, name)
    if plot and campaign.verdicts and not plotting_installed():
        plot = False  # a core install: no plots, and one line that says how to get them
        print("killtest: no plots (matplotlib is not installed here: pip install 'killtest[plot]')", file=sys.stderr)
    plot_file = f"{name}.png" if plot and campaign.verdicts else None
    # Written inside a checkout (results/cases/<case>/<release>/killtest.md), its commands read from the root.
    write_atomically(f"{base}.md", for_page(markdown(campaign, plot_file), f"{base}.md"))
    written = [f"{base}.json", f"{base}.md"]
    timelines = []
    if plot_file:
        # matplotlib is slow to import: only when plots are wanted
        from killtest.harness.report.campaign_plot import plot_campaign
        from killtest.harness.report.timeline import plot_timeline

        plot_campaign(campaign, f"{base}.png")
        os.makedirs(os.path.join(out_dir, "timelines"), exist_ok=True)
        for v in campaign.verdicts if all_timelines else timeline_runs(campaign):
            relative = os.path.join("timelines", f"{name}-{v.design}-run{v.run}.png")
            history = History.read_jsonl(history_path(out_dir, name, v.design, v.run))
            kills = f"seed {v.seed}" if v.seed is not None else f"schedule {campaign.settings.get('schedule')}"
            plot_timeline(history, os.path.join(out_dir, relative), f"{v.design}, run {v.run}, {kills}")
            timelines.append((f"{v.design} run {v.run} ({kills})", relative))
        written += [f"{base}.png"] + [os.path.join(out_dir, p) for _, p in timelines]
    if plot_file or page:
        write_atomically(f"{base}.html", for_page(summary_page(campaign, name, plot_file, timelines, lambda design, run:
                                                               _history(out_dir, name, design, run)), f"{base}.html"))
        written.append(f"{base}.html")
    return written


def _history(out_dir: str, name: str, design: str, run: int) -> History | None:
    """A run's history as the campaign wrote it; None when it is not there."""
    path = history_path(out_dir, name, design, run)
    return History.read_jsonl(path) if os.path.exists(path) else None
