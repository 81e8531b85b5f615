"""The results of `killtest cases` (results/cases.{json,md}) and the analyses page made from them.

results/cases.json holds every case ever run into that folder: a run of some cases (`--only`, `--release`)
replaces their releases and keeps the others', so the page always shows every case with its latest
measured figures. docs/explanation/analyses.md is written from it (`python -m
killtest.harness.report.case_table --write`, run by `make cases`), so a new case folder appears on the
page as soon as it has been run once; nothing on the page is typed by hand but the introduction. `--write`
also relabels cases.json's roles from each case.toml, rewrites each case README's generated tables
(case_readme_blocks.py) and each report.md (case_report_page.py) from the same cases.json, and quotes each
release's upstream words and the findings upstream does not have (case_words.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from killtest.harness.design.case_spec import Case
from killtest.harness.design.registry import PROJECT_ROOT
from killtest.harness.files import write_atomically
from killtest.harness.report.case_bisect_table import bisection_lines
from killtest.harness.report.case_explore_table import exploration_lines
from killtest.harness.report.case_fix_table import fix_table_lines, write_fix_blocks
from killtest.harness.report.case_frequencies import kills_cell, measured_text, run_times, verdict_text
from killtest.harness.report.case_readme_blocks import write_readme_blocks
from killtest.harness.report.case_report_page import rewrite_reports
from killtest.harness.report.case_words import (
    NOT_CASES,
    case_words,
    fix_lines,
    given_roles,
    relabelled,
    unreported_section,
    words_line,
)
from killtest.harness.report.pasted import from_root

ANALYSES_PAGE = os.path.join(PROJECT_ROOT, "docs", "explanation", "analyses.md")
RESULTS = os.path.join(PROJECT_ROOT, "results", "cases.json")

INTRO = """\
# Analyses: real frameworks at real releases

Every other failure in these docs is a mistake written for killtest. This page is the other kind:
crash-safety bugs that users reported to real scraping frameworks, each run as a **case**
(`scrapers/cases/<name>/`): the framework installed from its registry at pinned releases into an
environment of its own (a venv, a `node_modules`), a small crawler of the fixture shop written the way
the framework's docs write one, and the same kill schedule for every release. For a fixed bug the
release before the fix must be flagged with the finding the bug causes and the release with the fix
must pass; an open bug must be flagged on the current release; a clean case is a control that must
pass everywhere. Each flagged run prints a replay line, with the environment it needs, that
reproduces it alone.

```sh
make cases                                     # every case: killtest cases --out results, then this page
killtest cases --only crawlee-python-1825      # one case, both releases
killtest cases --bisect crawlee-node-1736 --from 3.0.4   # where the verdict changes, on the registry's releases
killtest cases --report crawlee-node-1736      # report.md of each flagged release, from runs of its own
killtest cases --explore scrapy-7094           # each release at every store write and power cut
killtest cases --explore crawlee-node-2085-locking -j 8   # 8 points at once: its runs mostly wait out locks
make analyses                                  # all of the above for every case, its time printed
```

The figures below are the latest runs of each release (results/cases.json, which keeps every release's latest
result whether `make cases` or `killtest cases --only` ran it), said as frequencies: each release runs its
case's aimed schedule n times (`--repeat`, default 5) and n times on timed kills that killtest spreads over its
crawl (the case's args without `--schedule` and `--time-limit`: killtest measures the crawl and sizes both),
each run a `killtest run` of its own; the verdict ("as expected") is the aimed runs', the spread-kill runs say
how often kills not aimed at the bug find it. A case whose runs wait out a lock may run fewer (its case.toml's
`repeat`, and `spread_kills` with a `spread_note`) and says why; a case whose bug is a race may state the share
of aimed runs it must be flagged in (`expect_share`; by default every one). The case READMEs' tables and each
report.md's figures are generated from the same file by the same command, and tests/test_case_numbers.py fails
when one disagrees. Each release says when it was measured (UTC), at which killtest commit, and what its env
held: every package installed, not only the pins, since what the pins pull in floats (results/cases.json lists
them all; this page, the pins' own dependencies). This page is generated from that file by `python -m
killtest.harness.report.case_table --write`. Its commands, and those of results/cases/*.md, read from the
repository root whichever checkout measured them (`.venv/bin/killtest ... --design scrapers/cases/... --out
results/...`, a case env as `~/.cache/killtest/...`); the JSON files keep the whole lines and the checkout they
ran in. How to add a case: notes in each case's README and [the spec
reference](../reference/spec.md) for its design; a flagged or fixed release also needs, in the case's
upstream.toml, the upstream words its role rests on (harness/report/case_words.py says the format).

**Framework timing.** killtest knows no framework's locks: it cannot tell a framework waiting out its
own lock from a stall, and it is not taught to (a framework's lock is its own business, and a wait
killtest excused would also excuse a real hang). Each case instead sets the framework's documented
options so that its waits fit the run (BullMQ's `lockDuration` 2 s and `stalledInterval` 0.5 s,
Crawlee for Python's `CRAWLEE_PERSIST_STATE_INTERVAL_MILLIS=200`), or, where no documented option
shortens the wait, raises `--time-limit` and `--no-progress-timeout` to the patience the framework
needs (Crawlee 3.18 holds a killed start's request locks for 180 s, and up to about 360 s for a request
in flight, since `prolongRequestLock` adds the lock time to the lock already there: crawlee-node-2085-locking
runs with 420 s and 400 s). With killtest's defaults a correct framework waiting out its lock is reported
as `liveness`, and what it had not stored yet as not stored because the crawl did not finish (never as
lost): crawlee-node-2085-locking at the default 120 s limit gave `liveness`, where 420 s shows the one
record really lost.

A release's role, given by its case.toml, and under each release the upstream words it rests on, quoted
with their link and where they were checked (the case's upstream.toml): **buggy** (a bug upstream reported;
its finding is expected), **documented limitation** (flagged for what the framework's own documentation or
maintainers say it does: Scrapy's "Pause limitations" from 2.15.0 on, BullMQ's at-least-once delivery and
`maxStalledCount`, the duplicates a hard kill leaves on apify 4.0.2 and 4.1.0, which apify-sdk-python#1103
says its fix cannot prevent), **unreported** (a loss no upstream issue reports as such: counted, with the
searches that did not find it, under "Findings upstream does not have"), **fixed** (the first release where
the case's finding stops; its quote names the upstream change, which need not be the reported issue's own
fix), **before the bug** (a clean release older than the bug: clean, not fixed), **clean twin** (a
correct design on a buggy version) or **control** (a case that must pass everywhere).

**Boundaries.** The pinned releases were picked by hand; `killtest cases --bisect CASE [--from V --to V]`
runs the same schedule on the registry's releases between two versions (pip's and npm's own listings) and
finds the last release without the case's bug and the first with it (or the reverse, for a fix): a release
broken by another finding is "flagged for X, not Y", on the no-bug side; a release that did not install, or
whose crawl timed out (it counts nothing as lost), gives no verdict and is gone around, and the summary
names it. Where a case was bisected, its section says what the bisection found
(results/cases/<case>/bisect.md lists every release, run or not). Where a flagged release has an
upstream-ready report (results/cases/<case>/<release>/report.md: the versions, a reproduction from a fresh
directory, the framework's own log lines, the source line of the write the kill landed on), its line links
it.
"""


def merged(previous: dict | None, cases: list[Case], outcomes: list, command: str) -> dict:
    """cases.json's content: `previous` with the releases just run replaced, and each case's metadata."""
    known: dict[str, dict] = dict((previous or {}).get("cases", {}))
    for case in cases:
        ran = [o for o in outcomes if o.case == case.name]
        if not ran:
            continue
        old = {(r["version"], r.get("label", "")): r for r in known.get(case.name, {}).get("releases", [])}
        for outcome in ran:
            old[(outcome.version, outcome.label)] = outcome.to_json()
        order = [(r.version, r.label) for r in case.releases]
        releases = [old[k] for k in order if k in old]
        known[case.name] = {
            "title": case.title, "framework": case.framework, "upstream": list(case.upstream),
            "status": case.status, "runtime": case.runtime, "args": list(case.args),
            "readme": os.path.relpath(os.path.join(case.folder, "README.md"), PROJECT_ROOT),
            "releases": releases,
        }
    return {"command": command, "cases": known}


def read_results(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as src:
            return json.load(src)
    except (OSError, ValueError):
        return None


def write_results(out: str, data: dict) -> None:
    write_atomically(os.path.join(out, "cases.json"), json.dumps(data, indent=2) + "\n")
    write_atomically(os.path.join(out, "cases.md"), cases_markdown(data))


def _expected_text(release: dict) -> str:
    return "flagged: " + ", ".join(release["expect"]) if release["expect"] else "clean"


def _counts(release: dict) -> str:
    if release["validity"] == "error":
        return ""
    # A crawl stopped before it finished (liveness) counts nothing as lost (issue 33): the records it had not
    # stored yet are said as such, from the same figures (distinct records = rows - duplicated).
    unstored = release["products"] - release["missing"] - (release["rows"] - release["duplicated"])
    return (f"{release['rows']} rows, {release['missing']} of {release['products']} lost,"
            + (f" {unstored} not stored (the crawl did not finish)," if unstored > 0 else "")
            + f" {release['duplicated']} duplicated, {release['kills']} kills landed")


def _release_name(release: dict) -> str:
    return release["version"] + (f" ({release['label']})" if release.get("label") else "")


def _role(release: dict, case: dict, name: str = "") -> str:
    """The release's role: a label its case.toml gives, read from there when the case still has the release
    (a label changes without a run); else as measured (cases.json), or the old reading for a result written
    before roles were kept."""
    given = given_roles().get((name, release["version"], release.get("label", "")))
    return given or release.get("role") or ("buggy" if release["expect"] else
                                            {"fixed": "fixed", "clean": "control"}.get(case["status"], "clean twin"))


def _provenance(release: dict) -> str:
    """`measured 2026-12-04 15:59 UTC at killtest 318e653`, or what of it the result holds."""
    when = release.get("measured_at", "")
    said = f"measured {when[:10]} {when[11:16]} UTC" if when else "measured at an unrecorded time"
    commit = release.get("killtest_commit")
    return said + (f" at killtest {commit}" if commit else " (killtest commit unrecorded)")


def cases_markdown(data: dict) -> str:
    """results/cases.md: one row per release, then each case's commands and replay lines."""
    lines = ["# killtest cases", "", f"`{data.get('command', '')}`", "",
             "Lines of results written inside the checkout are shown from its root; cases.json has them whole.", "",
             "| case | framework | release | expected | measured | as expected | the replayed run's records |"
             " seconds |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, case in sorted(data["cases"].items()):
        for r in case["releases"]:
            lines.append(f"| {name} | {case['framework']} | {_release_name(r)} | {_expected_text(r)} |"
                         f" {measured_text(r)} | {'yes' if r['as_expected'] else '**NO**'} | {_counts(r)} |"
                         f" {r['seconds']:g} |")
    for name, case in sorted(data["cases"].items()):
        lines += ["", f"## {name}", "", case["title"], ""]
        for r in case["releases"]:
            lines.append(f"- {_release_name(r)} ({_provenance(r)}): `{_shown(r['command'], r)}`")
            if r.get("replay"):
                lines.append(f"  - replay: `{_shown(r['replay'], r)}`")
            if r.get("spread_replay"):
                lines.append(f"  - replay of a flagged spread-kill run: `{_shown(r['spread_replay'], r)}`")
    return "\n".join(lines) + "\n"


def _shown(line: str, release: dict) -> str:
    """A release's line for people: from the checkout's root when its results were written inside the
    checkout (results/cases.md, committed, reads the same in any clone); whole otherwise (cases.json and
    the printed lines keep the whole paths, to paste from anywhere)."""
    root = release.get("root")
    if root and os.path.abspath(release.get("out", "")).startswith(root.rstrip(os.sep) + os.sep):
        return from_root(line, root)
    return line


def analyses_page(data: dict | None, results: str = RESULTS) -> str:
    """docs/explanation/analyses.md: the introduction, one table of every case, a section per case (with its
    bisection and reports, read beside `results`)."""
    cases = sorted((data or {}).get("cases", {}).items())
    lines = [INTRO, "## The cases", ""]
    if not cases:
        return "\n".join([*lines, "No case has been run yet: `make cases`.", ""])
    lines += ["| framework | version | role | bug | killtest's verdict | as expected | s | command |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, case in cases:
        for r in case["releases"]:
            lines.append(f"| {case['framework']} | {_release_name(r)} | {_role(r, case, name)} |"
                         f" [{name}](#{name}): {case['title']} | {measured_text(r)} |"
                         f" {'yes' if r['as_expected'] else '**NO**'} | {r['seconds']:g} |"
                         f" `killtest cases --only {name} --release {r['version']}` |")
    folder = os.path.join(os.path.dirname(results), "cases")
    for name, case in cases:
        links = ", ".join(f"<{u}>" for u in case["upstream"])
        lines += ["", f"### {name}", "", f"**{case['title']}** ({case['framework']}, status: {case['status']};"
                  f" upstream: {links}). What the bug is, the scenario and the settings:"
                  f" [{case['readme']}](../../{case['readme']}).", "",
                  f"Aimed runs' schedule and options, the same for every release: `{' '.join(case['args'])}`; the"
                  " spread-kill runs take the same without `--schedule` and `--time-limit`, which killtest measures"
                  " (kept where the case declares its own spread kills; each release's spread_command in"
                  " results/cases.json).", ""]
        for r in case["releases"]:
            lines.append(f"- **{_release_name(r)}**, {_role(r, case, name)} ({', '.join(r['packages'])}): expected"
                         f" {_expected_text(r)}; measured {measured_text(r)}"
                         f"{'' if r['as_expected'] else ' — **not as expected**'}; {run_times(r)}; {_provenance(r)}.")
            if r.get("frequencies"):
                lines.append(f"  {kills_cell(r)} The replayed aimed run: {verdict_text(r)} ({_counts(r)}).")
            said = words_line(name, r["version"], r.get("label", ""))
            if said:
                lines.append(f"  {said}")
            if r.get("installed"):
                lines.append(f"  Installed: {len(r['installed'])} packages (all in results/cases.json); the pins' own"
                             f" dependencies as resolved: {', '.join(r['dependencies']) or 'none'}.")
            if r.get("replay"):
                lines.append(f"  Replay, pasted from the repository: `{from_root(r['replay'], r.get('root'))}`")
            if r.get("spread_replay"):
                lines.append(f"  A flagged spread-kill run's replay: `{from_root(r['spread_replay'], r.get('root'))}`")
            report = os.path.join(folder, name, os.path.basename(r.get("out", "")) or r["version"], "report.md")
            if os.path.exists(report):
                lines.append(f"  Upstream-ready report: [{os.path.relpath(report, PROJECT_ROOT)}]"
                             f"(../../{os.path.relpath(report, PROJECT_ROOT)}).")
        lines += bisection_lines(os.path.join(folder, name), case["releases"])
        lines += [f"Not in the registry: {gap}" for gap in case_words(name)["bisect"].get("gaps", [])] + fix_lines(name)
        lines += exploration_lines(os.path.join(folder, name)) + fix_table_lines(os.path.join(folder, name))
    return "\n".join([*lines, "", *unreported_section([name for name, _ in cases]), "", NOT_CASES]) + "\n"


def _readme_tables(data: dict) -> dict[str, dict]:
    """Per case, the page's own formatters for its README's measured block (case_readme_blocks)."""
    return {name: {"role": lambda r, c=case, n=name: _role(r, c, n), "verdict": verdict_text,
                   "expected": _expected_text, "counts": _counts, "provenance": _provenance}
            for name, case in data.get("cases", {}).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write docs/explanation/analyses.md from results/cases.json")
    parser.add_argument("--results", default=RESULTS, help="the cases.json to read (default results/cases.json)")
    parser.add_argument("--write", action="store_true", help="write the page (default: print it)")
    args = parser.parse_args(argv)
    data = read_results(args.results)
    if args.write and data:
        # One run set behind every figure: cases.json's roles from case.toml, then the README blocks and the
        # reports from the same cases.json as the page.
        write_results(os.path.dirname(os.path.abspath(args.results)), relabelled(data))
        folder = os.path.join(os.path.dirname(os.path.abspath(args.results)), "cases")
        for path in write_readme_blocks(data, folder, _readme_tables(data)) + rewrite_reports(folder, data) \
                + write_fix_blocks(folder):
            print(f"wrote {path}", file=sys.stderr)
    page = analyses_page(data, args.results)
    if args.write:
        write_atomically(ANALYSES_PAGE, page)
        print(f"wrote {os.path.relpath(ANALYSES_PAGE)} from {args.results}", file=sys.stderr)
    else:
        sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
