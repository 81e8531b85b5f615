"""Worker scaling: the same designs, kills and site at 1, 2, 4 and 8 workers; a table and a plot."""

from __future__ import annotations

from killtest.harness.files import replacing
from killtest.harness.report.campaign import Campaign


def scaling_rows(campaigns: list[tuple[int, Campaign]]) -> list[dict]:
    """One row per design and worker count, over the campaign's runs."""
    rows = []
    for workers, campaign in campaigns:
        for design in campaign.designs():
            runs = campaign.of_design(design)
            rows.append({"design": design, "workers": workers, "runs": len(runs),
                         "wall_s": round(sum(v.wall_s for v in runs) / len(runs), 2),
                         "requests": round(sum(v.requests for v in runs) / len(runs), 1),
                         "repeated_requests": round(sum(v.repeated_requests for v in runs) / len(runs), 1),
                         "rows": round(sum(v.rows for v in runs) / len(runs), 1),
                         "correct_records": round(sum(v.correct_records for v in runs) / len(runs), 1),
                         "kills_landed": sum(v.kills for v in runs),
                         "kills_planned": sum(v.kills_planned for v in runs),
                         "lease_wait_s": round(sum(v.lease_wait_s for v in runs) / len(runs), 2),
                         "valid_runs": sum(v.valid for v in runs)})
    return rows


def _pace(pace_rps: float | None) -> str:
    return f"at most {pace_rps} requests/s" if pace_rps else "requests in parallel, unpaced"


def scaling_markdown(rows: list[dict], command: str, settings: dict) -> str:
    lines = ["# Worker scaling", "", f"Command: `{command}`", "",
             f"Each cell is the mean over {rows[0]['runs'] if rows else 0} run(s); every worker count gets the same"
             f" seeded kills ({settings.get('kills')} a run, each hitting every worker), the site answers each request"
             f" after {settings.get('latency_s')} s and serves {_pace(settings.get('pace_rps'))}.",
             "", "| design | workers | wall s | requests | repeated requests | rows | correct | kills landed |"
             " lease waits s | valid runs |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in sorted(rows, key=lambda r: (r["design"], r["workers"])):
        lines.append(f"| {r['design']} | {r['workers']} | {r['wall_s']:.2f} | {r['requests']:g}"
                     f" | {r['repeated_requests']:g}"
                     f" | {r['rows']:g} | {r['correct_records']:g} | {r['kills_landed']}/{r['kills_planned']}"
                     f" | {r['lease_wait_s']:.2f} | {r['valid_runs']}/{r['runs']} |")
    return "\n".join(lines) + "\n"


def plot_scaling(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    for design in sorted({r["design"] for r in rows}):
        mine = sorted((r for r in rows if r["design"] == design), key=lambda r: r["workers"])
        workers = [r["workers"] for r in mine]
        axes[0].plot(workers, [r["wall_s"] for r in mine], marker="o", label=design)
        axes[1].plot(workers, [r["repeated_requests"] for r in mine], marker="o", label=design)
    counts = sorted({r["workers"] for r in rows})
    for axis, label in zip(axes, ["wall time, s (kills and restarts included)", "repeated requests"]):
        axis.set_xscale("log", base=2)
        axis.set_xticks(counts, [str(n) for n in counts])
        axis.set_xlabel("workers")
        axis.set_ylabel(label)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    figure.tight_layout()
    with replacing(path) as temporary:
        figure.savefig(temporary, dpi=100, format="png")
    plt.close(figure)
