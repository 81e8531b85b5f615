"""A case's bisection as results: results/cases/<case>/bisect.json (the data) and bisect.md (the table).

The Markdown lists every release the registry has in the range, run or not, so a reader sees which
verdicts were measured and which were inferred from the neighbours that agree around them. Both files
come from the bisection's own data (campaigns/case_bisect.Bisection.to_json); nothing here is typed by hand.
"""

from __future__ import annotations

import json
import os

from killtest.harness.files import write_atomically
from killtest.harness.report.pasted import for_page


def bisect_markdown(data: dict, page: str = "") -> str:
    """The page of `data`; written at `page` inside a checkout, its lines read from the repository root."""
    def shown(line: str) -> str:
        return for_page(line, page, data.get("root")) if page else line

    runs = {run["version"]: run for run in data["runs"]}
    lines = [f"# Bisection of {data['case']}: {data['package']} {data['first']} to {data['last']}", ""]
    if data["changes"]:
        for change in data["changes"]:
            exact = "" if change["neighbours"] else " (not neighbours: the releases between them were not run)"
            lines.append(f"- **{change['last']}** is the last release **{change['last_verdict']}**,"
                         f" **{change['first']}** the first **{change['first_verdict']}**{exact}.")
    else:
        verdict = data["runs"][0]["verdict"] if data["runs"] else "-"
        lines.append(f"- The verdict is **{verdict}** at every release run.")
    if data.get("warning"):
        lines.append(f"- Warning: {data['warning']}.")
    lines += [f"- Ran {len(data['runs'])} of {len(data['versions'])} releases"
              f"{' (every release)' if data['every'] else ''} in {data['seconds']:.0f} s, env builds included;"
              f" measured {data['measured_at']} at killtest {data['killtest_commit'] or '(not a checkout)'}"
              " (a shared 2-core machine: times move by a third from run to run).",
              f"- Command: `{shown(data['command'])}`", "",
              "| release | verdict | findings | rows | lost | duplicated | kills | run s | env s | order"
              " | a start crashed in |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    order = {run["version"]: i for i, run in enumerate(data["runs"], 1)}
    for version in data["versions"]:
        run = runs.get(version)
        if run is None:
            lines.append(f"| {version} | not run | | | | | | | | | |")
            continue
        lines.append(f"| {version} | {run['verdict']} | {', '.join(run['got']) or '-'} | {run['rows']} |"
                     f" {run['missing']} | {run['duplicated']} | {run['kills']} | {run['seconds']:g} |"
                     f" {run['env_seconds']:g} | {order[version]} | {run.get('crashed_in') or '-'} |")
    errors = [run for run in data["runs"] if run.get("error")]
    if errors:
        lines += ["", "Errors:", ""] + [f"- {run['version']}: {shown(run['error'])}" for run in errors]
    lines += ["", "Each release's pins (a monorepo's packages at the newest release of each not newer than it):", ""]
    lines += [f"- {run['version']}: {' '.join(run['packages'])}" for run in data["runs"]]
    return "\n".join(lines) + "\n"


def write_bisection(out: str, data: dict) -> str:
    """Write <out>/cases/<case>/bisect.{json,md}; the Markdown's path is returned."""
    folder = os.path.join(out, "cases", data["case"])
    os.makedirs(folder, exist_ok=True)
    write_atomically(os.path.join(folder, "bisect.json"), json.dumps(data, indent=1) + "\n")
    path = os.path.join(folder, "bisect.md")
    write_atomically(path, bisect_markdown(data, path))
    return path


def bisection_lines(folder: str, pinned: list[dict]) -> list[str]:
    """The analyses page's lines for a case's bisection (folder/bisect.json), if it was bisected: each change,
    what ran, and whether the pinned releases in the range agree with the registry's boundary."""
    try:
        with open(os.path.join(folder, "bisect.json"), encoding="utf-8") as src:
            data = json.load(src)
    except (OSError, ValueError):
        return []
    link = f"../../results/cases/{data['case']}/bisect.md"
    found = "; ".join(f"**{c['last']}** the last {c['last_verdict']}, **{c['first']}** the first {c['first_verdict']}"
                      + ("" if c["neighbours"] else " (not neighbours)") for c in data["changes"]) or (
        f"{data['runs'][0]['verdict'] if data['runs'] else '-'} at every release run")
    lines = ["", f"Bisection ([every release]({link})): {found}; {len(data['runs'])} of {len(data['versions'])}"
             f" releases of {data['package']} from {data['first']} to {data['last']} run"
             f"{' (every one)' if data['every'] else ''}, {data['seconds']:.0f} s in all, measured"
             f" {data['measured_at'][:10]} at killtest {data['killtest_commit'] or '-'}."]
    order = {version: i for i, version in enumerate(data["versions"])}
    places: dict[str, str] = {}  # where a start crashed -> the oldest release run that crashed there
    for run in sorted(data["runs"], key=lambda run: order[run["version"]]):
        if run.get("crashed_in"):
            places.setdefault(run["crashed_in"].split(" in ", 1)[-1], run["version"])
    if len(places) > 1:
        lines.append("The crashed start's innermost frames (in the last stderr lines killtest keeps) changed: "
                     + "; ".join(f"in `{place}` from {version}"
                                                                          for place, version in places.items()) + ".")
    verdicts = {run["version"]: run["verdict"] for run in data["runs"]}
    unlike = [f"{r['version']} (pinned {'flagged' if r['expect'] else 'clean'}, bisected {verdicts[r['version']]})"
              for r in pinned if r["version"] in verdicts and not r.get("label")
              and verdicts[r["version"]] != ("flagged" if r["expect"] else "clean")]
    if unlike:
        lines.append(f"The pinned releases and the bisection disagree: {', '.join(unlike)}.")
    if data.get("warning"):
        lines.append(f"Warning: {data['warning']}.")
    return lines
