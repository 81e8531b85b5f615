"""A case's explorations as results: results/cases/<case>/explore.{json,md}, and the analyses page's lines.

Every figure comes from `killtest cases --explore CASE` (campaigns/case_explore.py): per release, the
points run, the broken ones, each distinct failure with where it landed and its replay line, the time.
"""

from __future__ import annotations

import json
import os

from killtest.harness.files import write_atomically
from killtest.harness.report.case_fix_table import fix_markdown, with_fixes
from killtest.harness.report.case_words import roles_by_key
from killtest.harness.report.pasted import for_page


def explore_markdown(data: dict, page: str = "") -> str:
    """The page of `data`; written at `page` inside a checkout, its commands read from the repository root
    (harness/report/pasted.py), whichever checkout each release was explored in."""
    def shown(line: str, row: dict | None = None) -> str:
        return for_page(line, page, data.get("root"), (row or {}).get("root")) if page else line

    lines = [f"# Exploration of {data['case']}: every store write{' and power cut' if _cut(data) else ''}",
             "", f"Measured {data['measured_at']} at killtest {data['killtest_commit'] or '-'} with `-j {data['jobs']}`"
             " on a shared 2-core machine (times move by a third from run to run). Command:"
             f" `{shown(data['command'])}`.", "",
             "| release | role | points | broken | distinct failures | s |", "| --- | --- | --- | --- | --- | --- |"]
    for row in data["releases"]:
        lines.append(f"| {row['key']} | {row['role']} | {row.get('points', '-')} | {row.get('broken', '-')} |"
                     f" {shown(str(row.get('distinct', row.get('error', '-'))), row)} | {row['seconds']:.0f} |")
    for row in data["releases"]:
        lines += ["", f"## {row['key']} ({row['role']})", "",
                  f"Finished {row.get('finished_at') or '-'}. Command: `{shown(row['command'], row)}`", ""]
        if "error" in row:
            lines.append(f"Did not finish: {shown(row['error'], row)}")
        if row.get("coverage"):  # the pages killed at, the store writes seen and made points of, what was left out
            lines += [f"Coverage: {shown(coverage_text(row['coverage']), row)}.", ""]
        for failure in row.get("failures", []):
            lines += [f"- **{', '.join(failure['findings'] or [])}** at {failure['count']} point(s)"
                      f" ({failure['points']}): {shown(failure['where'] or '', row)}.",
                      *[f"  - {shown(problem, row)}" for problem in failure.get("problems") or []],
                      f"  - replay: `{shown(failure['replay'], row)}`"]
        if not row.get("failures") and "error" not in row:
            lines.append("No point broke a promise.")
    return "\n".join(lines + fix_markdown(data)) + "\n"


def coverage_text(coverage: dict, kinds: int = 6) -> str:
    """An exploration's coverage in one sentence: the pages killed at, the store writes seen and explored (the
    most written `kinds` of file named), and what was left out and why (harness/campaigns/coverage.py)."""
    writes, pages = coverage["writes"], coverage["pages_killed_at"]
    named = "; ".join(f"{w['file']}: {w['seen']} seen, {w['points']} explored" for w in writes[:kinds])
    more = f"; {len(writes) - kinds} more kinds of file" if len(writes) > kinds else ""
    return (f"killed at {len(pages)} distinct page{'s' if len(pages) != 1 else ''} of the {coverage['pages_asked']}"
            f" a crawl asks for; {sum(w['seen'] for w in writes)} store writes seen,"
            f" {sum(w['points'] for w in writes)} explored{f' ({named}{more})' if writes else ''}; left out: "
            + ("; ".join(_fewer_kinds(why, kinds) for why in coverage["left_out"]) or "nothing"))


def _fewer_kinds(why: str, kinds: int) -> str:
    """`90 writes (64 to a, 20 to b, ...): why` with its first `kinds` kinds of file named, the rest counted."""
    counted, bracket, rest = why.partition(" (")
    listed, closing, reason = rest.partition("): ")
    each = listed.split(", ")
    if not (bracket and closing) or len(each) <= kinds:
        return why
    return f"{counted} ({', '.join(each[:kinds])} and {len(each) - kinds} more kinds): {reason}"


def write_exploration(out: str, data: dict) -> str:
    folder = os.path.join(out, "cases", data["case"])
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "explore.json")
    previous = _read(path)
    if previous and previous.get("releases"):  # one release explored again keeps the others'
        ran = {row["key"] for row in data["releases"]}
        data = {**data, "releases": [r for r in previous["releases"] if r["key"] not in ran] + data["releases"]}
    data = with_fixes(data)  # a candidate fix against its published release, point by point (case_fix_table.py)
    write_atomically(path, json.dumps(data, indent=1) + "\n")  # an interrupted write keeps the releases before
    page = os.path.join(folder, "explore.md")
    write_atomically(page, explore_markdown(data, page))
    return page


def _writes(row: dict) -> str:
    """`, 17 of its 39 store writes explored`: how many of the first start's writes had a point (the rest, and
    why, in explore.md's coverage line); empty for a row without coverage."""
    writes = (row.get("coverage") or {}).get("writes")
    if writes is None:
        return ""
    return f", {sum(w['points'] for w in writes)} of its {sum(w['seen'] for w in writes)} store writes explored"


def _cut(data: dict) -> bool:
    """Whether power cuts were explored: asked for, and given to a release's explore (a server's store gets none:
    campaigns/case_explore.explore_command), as its recorded command says."""
    return bool(data["power_cut"]) and any("--power-cut" in row.get("command", "") for row in data["releases"])


def _read(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as src:
            return json.load(src)
    except (OSError, ValueError):
        return None


# Why a case, or some of its releases, was not explored: written by hand, since no run measures it.
NOT_EXPLORED = {
    "bullmq-max-stalled": "An exploration kills once a point, and one kill stalls a job once, which maxStalledCount"
    " 1 allows: the case's loss needs the same job stalled twice (`r21,r1`), beyond an exploration of single"
    " points (its README).",
}


def exploration_lines(folder: str) -> list[str]:
    """The analyses page's lines for a case's explorations, if it was explored, and why not (NOT_EXPLORED)."""
    data = _read(os.path.join(folder, "explore.json"))
    why_not = NOT_EXPLORED.get(os.path.basename(folder))
    if not data:
        return ["", f"Exploration: {why_not}"] if why_not else []
    def release(r: dict) -> str:
        failures = f"{r['distinct']} distinct failure{'' if r['distinct'] == 1 else 's'}"
        return (f"{r['broken']} of {r['points']} points broken, {failures}, {r['seconds']:.0f} s{_writes(r)}"
                if "error" not in r else "did not finish")

    roles = roles_by_key(data["case"])  # the role case.toml gives now, not the one recorded with the run
    rows = "; ".join(f"{r['key']} ({roles.get(r['key'], r['role'])}): {release(r)}" for r in data["releases"])
    return ["", f"Explored at every store write{' and power cut' if _cut(data) else ''}"
                f" ([every failure, with its replay line](../../results/cases/{data['case']}/explore.md)): {rows}."
            + (f" {why_not[0].upper()}{why_not[1:]}" if why_not else "")]
