"""The generated blocks of each case README: its measured table and its exploration table, from the results.

A case README (scrapers/cases/<case>/README.md) holds its measured figures only between markers,

    <!-- generated: measured -->  ...  <!-- end generated: measured -->
    <!-- generated: explored -->  ...  <!-- end generated: explored -->

written by `python -m killtest.harness.report.case_table --write` from results/cases.json (the run set of
record: each release's latest `killtest cases` runs) and results/cases/<case>/explore.json, so that no
figure of a README is typed by hand and the README, the analyses page and the headline table read the same
run. tests/test_case_numbers.py fails when a block is missing or is not what these functions make now.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable

from killtest.harness.design.registry import PROJECT_ROOT
from killtest.harness.files import write_atomically
from killtest.harness.report.case_frequencies import kills_cell, run_times, set_cell
from killtest.harness.report.case_words import release_name, roles_by_key

KINDS = ("measured", "explored")


def _markers(kind: str) -> tuple[str, str]:
    return f"<!-- generated: {kind} -->", f"<!-- end generated: {kind} -->"


def measured_block(case: dict, role: Callable, verdict: Callable, expected: Callable, counts: Callable,
                   provenance: Callable) -> str:
    """The case's measured table: one row a release, as results/cases.json has it (the page's own words): its
    aimed runs and its spread-kill runs as frequencies (case_frequencies), what their kills tested, and the
    figures of the aimed run its replay line reproduces. A result of one run (written before releases ran
    several times) is said as one run."""
    several = any(r.get("frequencies") for r in case["releases"])
    lines = ["From results/cases.json, the run set of record (`make cases` or `killtest cases --only`): "
             + ("each release's aimed schedule run several times, and as many runs with timed kills spread over"
                " its crawl (the analyses page says how), each measured at the time and killtest commit named."
                " Seconds are the release's runs together, on a shared 2-core machine" if several else
                "one run per release, each measured at the time and killtest commit named. Seconds are that"
                " run's wall time on a shared 2-core machine")
             + "; the analyses page shows the same runs.", "",
             "| release | role | expected | aimed runs | spread-kill runs | kills | the replayed run | s | run |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in case["releases"]:
        aimed = set_cell(r, "aimed") if r.get("frequencies") else "one run"
        lines.append(f"| {release_name(r['version'], r.get('label', ''))} | {role(r)} | {expected(r)} | {aimed} |"
                     f" {set_cell(r, 'spread')} | {kills_cell(r) or '-'} | {verdict(r)} ({counts(r)}) |"
                     f" {run_times(r)} | {provenance(r)} |")
    return "\n".join(lines)


def explored_block(folder: str) -> str | None:
    """The case's exploration table, from results/cases/<case>/explore.json; None when it was not explored."""
    try:
        with open(os.path.join(folder, "explore.json"), encoding="utf-8") as src:
            data = json.load(src)
    except (OSError, ValueError):
        return None
    lines = [f"From results/cases/{data['case']}/explore.json (`killtest cases --explore {data['case']}`), each"
             " release's latest exploration; every failure, with its replay line, in"
             f" [explore.md](../../../results/cases/{data['case']}/explore.md).", "",
             "| release | role | points | broken | distinct failures | store writes explored | s | finished |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    roles = roles_by_key(data["case"])
    for r in data["releases"]:
        writes = (r.get("coverage") or {}).get("writes")
        explored = (f"{sum(w['points'] for w in writes)} of {sum(w['seen'] for w in writes)}"
                    if writes is not None else "-")
        lines.append(f"| {r['key']} | {roles.get(r['key'], r['role'])} | {r.get('points', '-')} |"
                     f" {r.get('broken', '-')} |"
                     f" {r.get('distinct', 'did not finish')} | {explored} | {r['seconds']:.0f} |"
                     f" {(r.get('finished_at') or '-')[:10]} |")
    return "\n".join(lines)


def with_block(text: str, kind: str, body: str) -> str:
    """`text` with the block `kind` replaced by `body`; unchanged when the README has no such markers."""
    begin, end = _markers(kind)
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text, count=1)


def block_in(text: str, kind: str) -> str | None:
    """What the README holds between the markers of `kind`, or None when it has none."""
    begin, end = _markers(kind)
    found = re.search(re.escape(begin) + r"\n(.*?)\n" + re.escape(end), text, re.S)
    return found.group(1) if found else None


def readme_path(case: dict) -> str:
    return os.path.join(PROJECT_ROOT, case["readme"])


def wanted_blocks(case: dict, folder: str, table: dict) -> dict[str, str]:
    """{kind: body} of the blocks the case's README must hold; `table` gives the page's own formatters."""
    wanted = {"measured": measured_block(case, **table)}
    explored = explored_block(folder)
    if explored is not None:
        wanted["explored"] = explored
    return wanted


def write_readme_blocks(data: dict, results_folder: str, tables: dict[str, dict]) -> list[str]:
    """Rewrite every case README's blocks from the results; the paths changed. `tables` holds, per case, the
    formatters measured_block takes (the analyses page's, bound to that case)."""
    changed = []
    for name, case in sorted(data.get("cases", {}).items()):
        path = readme_path(case)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as src:
            text = src.read()
        new = text
        for kind, body in wanted_blocks(case, os.path.join(results_folder, name), tables[name]).items():
            new = with_block(new, kind, body)
        if new != text:
            write_atomically(path, new)
            changed.append(os.path.relpath(path, PROJECT_ROOT))
    return changed
