"""results/bench.md and the bench's plots, from the rows the bench measured."""

from __future__ import annotations

from killtest.harness.files import replacing


def _span(values: list) -> str:
    low, high = values
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


def bench_markdown(results: dict) -> str:
    lines = ["# killtest bench", "", f"Command: `{results['command']}` ({results['machine']})", ""]
    if results.get("peers"):
        settings = results["peers_settings"]
        lines += ["## Peers under the same kills", "",
                  f"{settings['runs']} runs per scenario, seeds from {settings['seed']},"
                  f" {settings['products']} products,"
                  f" site paced at {settings['pace_rps']:g} requests/s, lease {settings['lease_s']:g} s. Every design"
                  " in a scenario gets the same schedules. Ranges are over the runs.", ""]
        for scenario in dict.fromkeys(row["scenario"] for row in results["peers"]):
            rows = [r for r in results["peers"] if r["scenario"] == scenario]
            lines += [f"### {scenario}: {rows[0]['scenario_text']}", "",
                      "| design | rows | rows/product | duplicated | lost | wrong | unreadable | requests | repeated"
                      " | kills landed | before work | wall s | findings |",
                      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
            for r in rows:
                lines.append(f"| {r['design']} | {_span(r['rows'])} | {r['rows_per_product']:.2f}"
                             f" | {_span(r['duplicated_records'])} | {_span(r['lost'])} | {_span(r['wrong'])}"
                             f" | {_span(r['unreadable'])} | {_span(r['requests'])} | {_span(r['repeated_requests'])}"
                             f" | {r['kills_landed']}/{r['kills_planned']} | {r['kills_before_work']}"
                             f" | {r['wall_s']:.1f}"
                             f" | {', '.join(r['findings']) or 'none'} |")
            lines.append("")
        lines += ["![peers](bench-peers.png)", ""]
    if results.get("faults"):
        lines += _faults_markdown(results["faults"])
    if results.get("scale"):
        lines += ["## The idempotent design as the catalog grows", "",
                  "Unpaced site, SIGKILLs at even shares of the crawl, then a run to the end. *ms a page* is the"
                  " run's wall time less its lease waits, over its requests (the four start-ups included);"
                  " *first tenth → last tenth* is the median gap between requests early and late in the crawl,"
                  " when the frontier and the store are nearly empty and when they are full; *frontier* is the"
                  " design's own"
                  " claim-and-commit per page with no network (harness/bench/frontier_cost.py); *the site's"
                  " ceiling* is what one sequential keep-alive client gets from the site (harness/bench/site_rate.py),"
                  " the least a page can take for a design that fetches one at a time.", "",
                  "| products | requests | kills | rows | correct | lost | wall s | lease waits s | ms a page"
                  " | first tenth → last tenth, ms | frontier ms a page | the site's ceiling, ms a page (requests/s)"
                  " | findings |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in results["scale"]:
            lines.append(f"| {r['products']:,} | {r['requests']:,} | {r['kills']} | {r['rows']:,} | {r['correct']:,}"
                         f" | {r['lost']} | {r['wall_s']:.1f} | {r['lease_wait_s']:.1f} | {r['ms_per_page']:.2f}"
                         f" | {r.get('first_tenth_ms', 0):.2f} → {r.get('last_tenth_ms', 0):.2f}"
                         f" | {r['frontier_ms_per_page']:.2f} | {r['site_ms_per_page']:.2f}"
                         f" ({r['site_ceiling_rps']:g}) | {', '.join(r['findings']) or 'none'} |")
        lines += ["", "![scale](bench-scale.png)", ""]
    if results.get("overhead"):
        o = results["overhead"]
        lines += ["## The harness's own cost", "", f"`{o['command']}`, timed from outside: {o['total_s']:.1f} s in all,"
                  f" {o['scraper_s']:.1f} s of it scrapers running, **{o['harness_s']:.1f} s"
                  f" ({100 * o['ratio']:.1f}%) the harness's own**.", "", "| part | seconds |", "| --- | --- |"]
        lines += [f"| {part} | {seconds:.2f} |" for part, seconds in o["parts"].items()]
        lines.append("")
    return "\n".join(lines)


def _faults_markdown(cells: list[dict]) -> list[str]:
    lines = ["## Each fault against each design", "",
             "One run a cell on the article's site at its pace, with three SIGKILLs at seeded request counts on top"
             " of the fault. A cell lists the checker's findings (*clean*: none), then the faulted requests and the"
             " retries the design reported. `killtest bench --only faults` reruns it.", ""]
    for group in (lambda c: c["fault"] != "side effects", lambda c: c["fault"] == "side effects"):
        mine = [c for c in cells if group(c)]
        if not mine:
            continue
        designs = list(dict.fromkeys(c["design"] for c in mine))
        lines += ["| fault | " + " | ".join(designs) + " |", "| --- " * (len(designs) + 1) + "|"]
        for fault in dict.fromkeys(c["fault"] for c in mine):
            row = {c["design"]: c for c in mine if c["fault"] == fault}
            what = row[designs[0]]["what"]
            lines.append(f"| **{fault}**: {what} | " + " | ".join(_cell(row.get(d)) for d in designs) + " |")
        lines.append("")
    return lines


def _cell(cell: dict | None) -> str:
    if cell is None:
        return "–"
    if not cell["applies"]:
        return cell["note"]
    found = ", ".join(cell["findings"]) or "clean"
    extra = f" ({cell['faulted_requests']} faults, {cell['retries']} retries)" if cell["faulted_requests"] else ""
    return f"{found}{extra}"


def plot_peers(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    designs = list(dict.fromkeys(r["design"] for r in rows))
    figure, axes = plt.subplots(1, 2, figsize=(12, 4))
    width = 0.8 / len(designs)
    for i, design in enumerate(designs):
        mine = {r["scenario"]: r for r in rows if r["design"] == design}
        xs = [s + i * width for s in range(len(scenarios))]
        axes[0].bar(xs, [mine[s]["rows_per_product"] for s in scenarios], width, label=design)
        axes[1].bar(xs, [mine[s]["lost"][1] for s in scenarios], width, label=design)
    for axis, label in zip(axes, ["rows per product (mean; 1 is right)", "records lost (worst run)"]):
        axis.set_xticks([s + 0.4 - width / 2 for s in range(len(scenarios))], scenarios)
        axis.set_ylabel(label)
        axis.grid(alpha=0.3, axis="y")
        axis.legend(fontsize=8)
    figure.subplots_adjust(left=0.06, right=0.99, top=0.95, bottom=0.1, wspace=0.2)
    _save(figure, path)


def plot_scale(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.5))
    products = [r["products"] for r in rows]
    axis.plot(products, [r["ms_per_page"] for r in rows], marker="o",
              label="idempotent design, killed and resumed (wall less lease waits, per request)")
    axis.plot(products, [r["frontier_ms_per_page"] for r in rows], marker="s",
              label="its frontier and upsert alone, no network")
    axis.plot(products, [r["site_ms_per_page"] for r in rows], color="black", linestyle="--",
              label="limit: the site's ceiling for one sequential client")
    axis.set_xscale("log")
    axis.set_xlabel("products in the catalog")
    axis.set_ylabel("milliseconds a page")
    axis.set_ylim(bottom=0)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    figure.subplots_adjust(left=0.09, right=0.98, top=0.96, bottom=0.12)
    _save(figure, path)


def _save(figure, path: str) -> None:
    import matplotlib.pyplot as plt

    with replacing(path) as temporary:
        figure.savefig(temporary, dpi=100, format="png")
    plt.close(figure)
