"""The campaign plot: rows and requests per run for every design, the article's values marked."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # files only; no display is needed or wanted
import matplotlib.pyplot as plt  # noqa: E402

from killtest.harness.files import replacing  # noqa: E402
from killtest.harness.published import published_run  # noqa: E402
from killtest.harness.report.campaign import PUBLISHED_COLUMNS, Campaign  # noqa: E402


def _plot_health(campaign: Campaign, panel, designs: list[str], runs: list[int], width: float) -> None:
    """The article's health metric per run, with the threshold above which killtest warns."""
    for i, design in enumerate(designs):
        by_run = {v.run: v.requests_per_record for v in campaign.of_design(design)}
        xs = [r + (i - (len(designs) - 1) / 2) * width for r in runs]
        panel.bar(xs, [by_run.get(r) or 0 for r in runs], width)
    threshold = campaign.settings.get("health_threshold")
    if threshold:
        panel.axhline(threshold, color="red", linestyle="--", linewidth=1)
        panel.annotate(f"warning above {threshold:g}", (runs[0] - 0.45, threshold), fontsize=7, color="red",
                       va="bottom")
    panel.set_title("Requests per stored record (health)")
    panel.set_xlabel("run")
    panel.set_xticks(runs)
    panel.grid(axis="y", alpha=0.3)


def plot_campaign(campaign: Campaign, path: str) -> None:
    designs = campaign.designs()
    runs = sorted({v.run for v in campaign.verdicts})
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    width = 0.8 / max(1, len(designs))
    for panel, (field, title) in zip(axes, [("rows", "Rows stored"), ("requests", "Requests served")]):
        for i, design in enumerate(designs):
            by_run = {v.run: getattr(v, field) for v in campaign.of_design(design)}
            xs = [r + (i - (len(designs) - 1) / 2) * width for r in runs]
            bars = panel.bar(xs, [by_run.get(r, 0) for r in runs], width, label=f"{design} (ours)")
            columns = PUBLISHED_COLUMNS.get(design)
            if columns:
                column = columns[0] if field == "rows" else columns[1]
                published = [(x, getattr(published_run(r), column)) for x, r in zip(xs, runs) if published_run(r)]
                if published:
                    panel.scatter([x for x, _ in published], [y for _, y in published], marker="D", s=45,
                                  color=bars.patches[0].get_facecolor(), edgecolors="black", linewidths=1.2,
                                  zorder=3, label=f"{design} (published)")
        minimum = campaign.settings["products" if field == "rows" else "full_crawl_requests"]
        panel.axhline(minimum, color="grey", linestyle="--", linewidth=1, label=f"minimum ({minimum})")
        panel.set_title(title)
        panel.set_xlabel("run")
        panel.set_xticks(runs)
        panel.grid(axis="y", alpha=0.3)
    _plot_health(campaign, axes[2], designs, runs, width)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    figure.suptitle(plot_title(campaign.settings))
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    with replacing(path) as temporary:
        figure.savefig(temporary, dpi=110, format="png")
    plt.close(figure)


def plot_title(settings: dict) -> str:
    """The plot's title, true to the run: how many kill points a run had, and whose schedule."""
    kills = settings.get("kills") or 0
    every = "the same schedule for every design" if len(settings.get("designs") or []) > 1 else "one design"
    if settings.get("schedule"):
        return f"killtest: schedule {settings['schedule']}, {every}"
    return f"killtest: {kills} kill point{'s' if kills != 1 else ''} a run (seed {settings.get('seed')}), {every}"
