"""A case's bisection as results: results/cases/<case>/bisect.json (the data) and bisect.md (the table).

The Markdown lists every release the registry has in the range, run or not, so a reader sees which
verdicts were measured and which were inferred from the neighbours that agree around them. Both files
come from the bisection's own data (campaigns/case_bisect.Bisection.to_json); nothing here is typed by hand.
The point every release was killed at is named with the case's word on why it is the same write on each, and a
boundary next to releases upstream made but the registry lacks reads "between A and B (C not in the registry:
what upstream's changelog says changed in C, linked)", those releases listed in the table where they belong.
"""

from __future__ import annotations

import json
import os

from killtest.harness.files import write_atomically
from killtest.harness.report.pasted import for_page


def missing_words(notes: list[dict], link: bool = True) -> str:
    """` (3.10.0 not in the registry: 3.10.0 (2024-05-16) "make `RequestQueue` v2 the default queue (#2390)" and
    15 other changelog entries [changelog](link))`, for upstream's releases the registry lacks between two it has;
    "" for none. `link=False` for a terminal: the link as a bare address."""
    if not notes:
        return ""
    said = []
    for note in notes:
        quoted = "; ".join(f"\u201c{change}\u201d" for change in note["changes"]) or "no entry quoted"
        others = note.get("others", 0)
        more = f" and {others} other changelog entr{'y' if others == 1 else 'ies'}" if others else ""
        where = f" [changelog]({note['link']})" if link else f" ({note['link']})"
        said.append(f"{note['version']}{' (' + note['date'] + ')' if note.get('date') else ''}: {quoted}{more}{where}")
    names = ", ".join(note["version"] for note in notes)
    return f" ({names} not in the registry: {'; '.join(said)})"


def _between(data: dict, last: str, first: str) -> list[dict]:
    """The releases the registry lacks between two it has (data["missing"], each placed `after` one it has)."""
    versions = data["versions"]
    if last not in versions or first not in versions:
        return []
    inside = versions[versions.index(last):versions.index(first)]
    return [note for note in data.get("missing", []) if note.get("after") in inside]


def bisect_markdown(data: dict, page: str = "") -> str:
    """The page of `data`; written at `page` inside a checkout, its lines read from the repository root."""
    def shown(line: str) -> str:
        return for_page(line, page, data.get("root")) if page else line

    runs = {run["version"]: run for run in data["runs"]}
    lines = [f"# Bisection of {data['case']}: {data['package']} {data['first']} to {data['last']}", ""]
    if data["changes"]:
        for change in data["changes"]:
            exact = "" if change["neighbours"] else " (not neighbours: the releases between them were not run)"
            lines.append(f"- The verdict changes between **{change['last']}** and **{change['first']}**"
                         f"{missing_words(_between(data, change['last'], change['first']))}:"
                         f" {change['last']} is the last release **{change['last_verdict']}**,"
                         f" {change['first']} the first **{change['first_verdict']}**{exact}.")
    else:
        verdict = data["runs"][0]["verdict"] if data["runs"] else "-"
        lines.append(f"- The verdict is **{verdict}** at every release run.")
    if data.get("warning"):
        lines.append(f"- Warning: {data['warning']}.")
    if data.get("point"):
        lines.append(f"- Every release was killed at `{data['point']}`"
                     + (f": {data['point_why']}" if data.get("point_why") else "") + ". A release where no kill"
                     " landed there says nothing of it: **no verdict (point not reached)**, never counted clean."
                     " *Rows at the kill*: the records the store held when it landed, which says whether the write"
                     " came before or after the record it belongs with was stored.")
    unlisted = data.get("missing", [])
    if unlisted:
        lines.append(f"- Not in the registry, so not run: {', '.join(note['version'] for note in unlisted)}"
                     " (upstream's releases in the range that the registry reachable here does not list).")
    lines += [f"- Ran {len(data['runs'])} of {len(data['versions'])} releases"
              f"{' (every release)' if data['every'] else ''} in {data['seconds']:.0f} s, env builds included;"
              f" measured {data['measured_at']} at killtest {data['killtest_commit'] or '(not a checkout)'}"
              " (a shared 2-core machine: times move by a third from run to run).",
              f"- Command: `{shown(data['command'])}`", "",
              "| release | verdict | findings | rows | lost | duplicated | kills | rows at the kill | run s | env s"
              " | order | a start crashed in |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    order = {run["version"]: i for i, run in enumerate(data["runs"], 1)}
    rows = [(version, runs.get(version)) for version in data["versions"]]
    for note in reversed(unlisted):  # each after the registry's release before it, oldest first (inserted newest first)
        at = next((i for i, (version, _) in enumerate(rows) if version == note.get("after")), len(rows) - 1)
        rows.insert(at + 1, (note["version"], None))
    unlisted_versions = {note["version"] for note in unlisted}
    for version, run in rows:
        if run is None:
            what = "not in the registry" if version in unlisted_versions else "not run"
            lines.append(f"| {version} | {what} | | | | | | | | | | |")
            continue
        lines.append(f"| {version} | {run['verdict']} | {', '.join(run['got']) or '-'} | {run['rows']} |"
                     f" {run['missing']} | {run['duplicated']} | {run['kills']} |"
                     f" {'-' if run.get('rows_at_kill') is None else run['rows_at_kill']} | {run['seconds']:g} |"
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
    found = "; ".join(f"between **{c['last']}** and **{c['first']}**"
                      f"{missing_words(_between(data, c['last'], c['first']))} ({c['last']} the last"
                      f" {c['last_verdict']}, {c['first']} the first {c['first_verdict']}"
                      + ("" if c["neighbours"] else ", not neighbours") + ")" for c in data["changes"]) or (
        f"{data['runs'][0]['verdict'] if data['runs'] else '-'} at every release run")
    at = f" at `{data['point']}` on every release" if data.get("point") else ""
    lines = ["", f"Bisection ([every release]({link})){at}: {found}; {len(data['runs'])} of {len(data['versions'])}"
             f" releases of {data['package']} on the registry from {data['first']} to {data['last']} run"
             f"{' (every one)' if data['every'] else ''}, {data['seconds']:.0f} s in all, measured"
             f" {data['measured_at'][:10]} at killtest {data['killtest_commit'] or '-'}."]
    order = {version: i for i, version in enumerate(data["versions"])}
    places: dict[str, tuple[str, str]] = {}  # where a start crashed -> (the release run before, the oldest there)
    before = ""
    for run in sorted(data["runs"], key=lambda run: order[run["version"]]):
        if run.get("crashed_in"):
            places.setdefault(run["crashed_in"].split(" in ", 1)[-1], (before, run["version"]))
            before = run["version"]
    if len(places) > 1:
        lines.append("The crashed start's innermost frames (in the last stderr lines killtest keeps) changed: "
                     + "; ".join(f"in `{place}` from {version}" + (f" (between {prior} and {version}"
                                 f"{missing_words(_between(data, prior, version))})" if prior else "")
                                 for place, (prior, version) in places.items()) + ".")
    verdicts = {run["version"]: run["verdict"] for run in data["runs"]}
    unlike = [f"{r['version']} (pinned {'flagged' if r['expect'] else 'clean'}, bisected {verdicts[r['version']]})"
              for r in pinned if r["version"] in verdicts and not r.get("label")
              and verdicts[r["version"]] != ("flagged" if r["expect"] else "clean")]
    if unlike:
        lines.append(f"The pinned releases and the bisection disagree: {', '.join(unlike)}.")
    if data.get("warning"):
        lines.append(f"Warning: {data['warning']}.")
    return lines
