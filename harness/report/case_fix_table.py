"""A candidate fix shown to work: a release explored before and after its patch, point against point.

A case release may carry a patch (case.toml's `patch`: harness/design/case_spec.py), a candidate fix applied to
the same pins in an env of its own; `killtest cases --explore` explores it as it does the published release
(campaigns/case_explore.py). This module pairs the two explorations' points by the operation each one kills
at, and says which broke before and after.

The operation of a store-write point is the write of one version of one store file: the k-th write whose data
ends up in FILE (the same file and k on both sides), on the side of it the point kills (`w` before the write,
`aw` after it, `xw`/`xaw` for a power cut). A point named `w<k>:into:FILE` says so itself (file_aims.py); the
published release's numbered `w<n>` says it in its words, `before the 2nd write to FILE` (describe_write, from
the exploration's own recording), read only for a plain write, the single kind of call there. What the patch
adds has nothing to pair with, and is listed as the patched side's own: a rename over the file (`w<k>:FILE`)
is a step the published release does not make. A point whose kill landed at another write than its aim is
counted apart (`off aim`), never paired.

Plain data in explore.json (`fix_comparison`), and its words: explore.md's section, the case README's generated
block (`<!-- generated: fix -->`) and the analyses page's table.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections import Counter

from killtest.harness.design.case_spec import CASES_FOLDER
from killtest.harness.files import write_atomically

_INTO = re.compile(r"^(?P<side>x?a?w)(?P<k>\d+):into:(?P<file>.+)$")
_NUMBERED = re.compile(r"^(?P<side>x?a?w)(?P<n>\d+)$")
_BY_FILE = re.compile(r"^(?P<side>x?a?w)(?P<k>\d+):(?P<file>.+)$")
_WRITE = re.compile(r"\b(?:before|after) the (?P<k>\d+)(?:st|nd|rd|th) (?P<call>\w+) (?:to|of) (?P<file>[^\s,()]+)")
MARKERS = ("<!-- generated: fix -->", "<!-- end generated: fix -->")


def operation(point: str, where: str) -> str:
    """`w2:into:FILE` for a point that kills at the 2nd write of FILE's content (its side kept: `xaw2:into:FILE`),
    `w1:fsync:FILE` at another call a numbered point's words name, `rename:w2:FILE` for a point that kills at a call
    naming FILE (a rename over it), "" when its words name none."""
    into = _INTO.match(point)
    if into:
        return point
    numbered = _NUMBERED.match(point)
    if numbered:
        write = _WRITE.search(where)
        if write is None or "off its aim" in where:
            return ""
        how = "into" if write["call"] == "write" else write["call"]  # `xw2:fsync:FILE`: the 2nd fsync of FILE
        return f"{numbered['side']}{write['k']}:{how}:{write['file']}"
    by_file = _BY_FILE.match(point)
    return f"rename:{point}" if by_file else ""


def _result(outcome: dict) -> str:
    """`lost, unreadable` (its findings) for a broken point; `held`; `not landed` when no kill reached it."""
    if not outcome.get("valid", True):
        return ", ".join(outcome.get("findings") or ["broken"])
    return "held" if outcome.get("landed") else "not landed"


def outcomes_of(folder: str) -> list[dict]:
    """The per-point outcomes of the exploration written in `folder` (its explore-*.json), [] when none."""
    path = next(iter(sorted(glob.glob(os.path.join(folder, "explore-*.json")))), None)
    if path is None:
        return []
    with open(path, encoding="utf-8") as src:
        return list(json.load(src).get("outcomes", []))


def fix_comparison(before: dict, after: dict) -> dict:
    """The published release's exploration row (`before`, explore.json's) against its patched one's (`after`):
    each operation both explored, what it did on each side; what only one side explored; the totals."""
    sides: dict[str, tuple[dict[str, dict], Counter[str]]] = {}
    for name, row in (("before", before), ("after", after)):
        ops: dict[str, dict] = {}
        unpaired = Counter[str]()
        for outcome in outcomes_of(row.get("out", "")):
            op = operation(outcome["point"], outcome.get("where", ""))
            if op and not op.startswith("rename:") and op not in ops:
                ops[op] = {"point": outcome["point"], "result": _result(outcome)}
            else:
                unpaired[_result(outcome)] += 1
        sides[name] = ops, unpaired
    (mine, theirs) = sides["before"][0], sides["after"][0]
    both = [op for op in mine if op in theirs]
    pairs: list[dict] = [{"operation": op, "before": mine[op], "after": theirs[op]} for op in both]

    def broken(ops: list[dict]) -> int:
        return sum(1 for o in ops if o["result"] not in ("held", "not landed"))

    return {"before": before["key"], "after": after["key"], "pairs": pairs,
            "paired": len(pairs), "broken_before": broken([p["before"] for p in pairs]),
            "broken_after": broken([p["after"] for p in pairs]),
            "fixed": sum(1 for p in pairs if broken([p["before"]]) and not broken([p["after"]])),
            "broken_only_after": sum(1 for p in pairs if broken([p["after"]]) and not broken([p["before"]])),
            "not_landed_after": sum(1 for p in pairs if p["after"]["result"] == "not landed"),
            "only_before": dict(sides["before"][1] + Counter(mine[o]["result"] for o in mine if o not in theirs)),
            "only_after": dict(sides["after"][1] + Counter(theirs[o]["result"] for o in theirs if o not in mine))}


def _counted(counts: dict) -> str:
    total = sum(counts.values())
    broken = sum(n for result, n in counts.items() if result not in ("held", "not landed"))
    return f"{total} point{'s' if total != 1 else ''}, {broken} broken" if total else "none"


def summary_rows(data: dict) -> list[str]:
    """The before/after table's rows (markdown), one a candidate fix in explore.json's `fixes`."""
    rows = []
    for fix in data.get("fixes", []):
        rows.append(f"| {fix['before']} -> {fix['after']} | {fix['paired']} | {fix['broken_before']} |"
                    f" {fix['broken_after']} | {fix['fixed']} | {fix['broken_only_after']} |"
                    f" {fix['not_landed_after']} | {_counted(fix['only_before'])} | {_counted(fix['only_after'])} |")
    return rows


HEAD = ["| published -> patched | operations explored on both | broken before | broken after | fixed |"
        " broken only after | not landed after | points only before | points only after (the patch's own steps) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]


def with_fixes(data: dict) -> dict:
    """`data` (explore.json's) with `fixes`: each patched release's exploration against its published release's
    (the same version, not a candidate fix, the twin without a label first), when both were explored."""
    fixes = []
    for after in data["releases"]:
        if after.get("role") != "candidate fix" or "error" in after:
            continue
        bases = sorted((r for r in data["releases"] if r["version"] == after["version"] and r is not after
                        and r.get("role") != "candidate fix" and "error" not in r), key=lambda r: bool(r.get("label")))
        if not bases:
            continue
        kept = [f for f in data.get("fixes", []) if (f["before"], f["after"]) == (bases[0]["key"], after["key"])]
        if kept and not (outcomes_of(bases[0].get("out", "")) and outcomes_of(after.get("out", ""))):
            fixes += kept  # the explorations' own folders are not committed (results/cases/ keeps explore.json)
        else:
            fixes.append(fix_comparison(bases[0], after))
    return {**data, "fixes": fixes}


def fix_markdown(data: dict) -> list[str]:
    """explore.md's section: the table, then every operation broken on either side, before and after."""
    if not data.get("fixes"):
        return []
    lines = ["", "## Before and after the candidate fix", "",
             "Each point paired with the other side's point that kills at the same operation: the write of the same"
             " version of the same store file (`w2:into:FILE`, the 2nd write whose data ends up in FILE), on the same"
             " side of it (`aw` after it, `xw` a power cut); harness/report/case_fix_table.py says how.", "",
             *HEAD, *summary_rows(data)]
    for fix in data["fixes"]:
        changed = [p for p in fix["pairs"] if "held" not in (p["before"]["result"], p["after"]["result"])
                   or p["before"]["result"] != p["after"]["result"]]
        lines += ["", f"Operations broken on either side, or landing differently ({fix['before']} -> {fix['after']}):",
                  ""]
        lines += [f"- `{p['operation']}`: {p['before']['result']} (`{p['before']['point']}`) ->"
                  f" {p['after']['result']} (`{p['after']['point']}`)" for p in changed] or ["- none"]
    return lines


def fix_block(folder: str) -> str | None:
    """The case README's before/after block, from results/cases/<case>/explore.json; None without a fix explored."""
    try:
        with open(os.path.join(folder, "explore.json"), encoding="utf-8") as src:
            data = json.load(src)
    except (OSError, ValueError):
        return None
    if not data.get("fixes"):
        return None
    return "\n".join([f"From results/cases/{data['case']}/explore.json (`killtest cases --explore {data['case']}`):"
                      " each point of the published release paired with the patched release's point at the same"
                      " operation; every pair in"
                      f" [explore.md](../../../results/cases/{data['case']}/explore.md).", "", *HEAD,
                      *summary_rows(data)])


def write_fix_blocks(results_cases: str, cases_root: str = CASES_FOLDER) -> list[str]:
    """Rewrite the fix block of every case README that has the markers; the paths written."""
    written = []
    for readme in sorted(glob.glob(os.path.join(cases_root, "*", "README.md"))):
        name = os.path.basename(os.path.dirname(readme))
        with open(readme, encoding="utf-8") as src:
            text = src.read()
        block = fix_block(os.path.join(results_cases, name))
        start, end = MARKERS
        if block is None or start not in text or end not in text:
            continue
        new = text[:text.index(start) + len(start)] + "\n" + block + "\n" + text[text.index(end):]
        if new != text:
            write_atomically(readme, new)
            written.append(readme)
    return written


def fix_table_lines(folder: str) -> list[str]:
    """The analyses page's before/after table for a case with a candidate fix explored; [] otherwise."""
    block = fix_block(folder)
    if block is None:
        return []
    name = os.path.basename(folder)
    return ["", f"Candidate fix, explored before and after ([each pair](../../results/cases/{name}/explore.md)):",
            "", *HEAD, *summary_rows(json.load(open(os.path.join(folder, "explore.json"), encoding="utf-8")))]
