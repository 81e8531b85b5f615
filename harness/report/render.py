"""Render the report's sections: Markdown for the repository, a static HTML page that opens with no server."""

from __future__ import annotations

import html
from collections.abc import Callable

from killtest.harness.check.distinct import Broken, point_ranges, triage_of
from killtest.harness.history import History
from killtest.harness.report.campaign import Campaign, failure_reasons
from killtest.harness.report.coverage_words import coverage_markdown
from killtest.harness.report.inline import inline_html
from killtest.harness.report.sections import Section, replay_of, report_sections, runs_line
from killtest.harness.report.triage import (
    LEGEND,
    by_promise_line,
    exploration_header,
    failures_markdown,
    locating_words,
    point_failures,
    run_failures,
    waived_line,
)
from killtest.harness.report.triage_page import failure_view, triage_page


def _preamble(campaign: Campaign) -> list[str]:
    lines = [f"Command: `{campaign.command}`"]
    if not campaign.complete:
        why = campaign.stopped_by or "still running, or stopped before it could say why"
        lines.append(f"**Incomplete:** the campaign did not finish ({why}); only the runs below finished, and"
                     " they prove nothing about the runs that never ran.")
    verdict = "PASS" if campaign.valid else "FAIL" if campaign.complete else "INCOMPLETE"
    why = "; ".join(failure_reasons(campaign)) if verdict == "FAIL" else ""  # a FAIL says what failed
    lines.append(f"Verdict: **{verdict}**" + (f": {why}" if why else ""))
    return lines


def markdown(campaign: Campaign, plot_file: str | None) -> str:
    lines = ["# killtest results", ""]
    for paragraph in _preamble(campaign):
        lines += [paragraph, ""]
    for section in report_sections(campaign):
        lines += [f"## {section.title}", ""]
        for paragraph in section.paragraphs:
            lines += [paragraph, ""]
        if section.header:
            lines += ["| " + " | ".join(section.header) + " |", "|" + " --- |" * len(section.header)]
            lines += ["| " + " | ".join(row) + " |" for row in section.rows]
            lines.append("")
        if section.bullets:
            lines += [f"- {bullet}" for bullet in section.bullets] + [""]
    if plot_file and campaign.verdicts:
        lines += [f"![rows and requests per run]({plot_file})", ""]
    return "\n".join(lines)


def _inline(text: str) -> str:
    """The little Markdown the sections use (`code`, **bold**, *emphasis*) as HTML; a code span taken literally."""
    return inline_html(text)


def _html_section(section: Section) -> list[str]:
    out = [f"<h2>{_inline(section.title)}</h2>"] + [f"<p>{_inline(p)}</p>" for p in section.paragraphs]
    if section.header:
        out.append("<table><tr>" + "".join(f"<th>{_inline(h)}</th>" for h in section.header) + "</tr>")
        out += ["<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in section.rows]
        out.append("</table>")
    if section.bullets:
        out += ["<ul>"] + [f"<li>{_inline(b)}</li>" for b in section.bullets] + ["</ul>"]
    return out


def summary_page(campaign: Campaign, name: str, plot_file: str | None, timelines: list[tuple[str, str]],
                 history_of: Callable[[str, int], History | None] = lambda design, run: None) -> str:
    """NAME.html: the triage page explore and fuzz write (report/triage_page.py), for a campaign. Its distinct
    failures first, each with its run's timeline (read by `history_of(design, run)`), the keys the store got
    wrong and its replay line; the runs that passed; then every table, and the plots when they were drawn.
    HTML and SVG only: written with or without matplotlib and --no-plot."""
    failures = run_failures(campaign.verdicts)
    replays = campaign.settings.get("replays") or {}
    views = []
    for failure in failures:
        v = next(v for v in campaign.verdicts if v.design == failure.place and f"run{v.run}" == failure.example.point)
        history = history_of(v.design, v.run)
        found = triage_of(v, history) if history is not None else {}
        kinds = ("lost", "not_stored_unfinished", "duplicated", "unexpected", "unreadable")
        views.append(failure_view(failure, replay_of(replays, v.design, v.run) or "", found.get("timeline"),
                                  found.get("keys") or {k: v.categories.get(k, {}).get("examples", []) for k in kinds},
                                  "run", counts={k: v.categories.get(k, {}).get("count", 0) for k in kinds}))
    lines = [*_preamble(campaign), runs_line(campaign) + "."]
    passing, unproved = [], []
    for design in dict.fromkeys(v.design for v in campaign.verdicts):
        runs = [v for v in campaign.verdicts if v.design == design]
        kept = [f"run{v.run}" for v in runs if v.valid]
        nothing = [f"run{v.run}" for v in runs if v.proved_nothing]
        if kept:  # the green box holds only what passed: a design none of whose runs did is not in it
            passing.append(f"**{design}**: {len(kept)} of {len(runs)} run{'s' if len(runs) != 1 else ''} kept every"
                           f" promise: `{point_ranges(kept)}`.")
        if nothing:
            unproved.append(f"**{design}**: {len(nothing)} of {len(runs)} run{'s' if len(runs) != 1 else ''} proved"
                            f" nothing (no kill landed on a start at work): `{point_ranges(nothing)}`.")
    body = []
    for section in report_sections(campaign):
        if not section.title.startswith("Distinct failures"):  # drawn above, a section each
            body += _html_section(section)
    if plot_file:
        body += ["<h2>Rows and requests per run</h2>", f'<img src="{plot_file}" alt="rows and requests per run">']
    if timelines:
        body.append("<h2>Timelines</h2><p>Requests served and records stored over time; red: a SIGKILL until"
                    " the restart; orange: a start waiting for a lease left by a killed one.</p>")
        body += [f'<figure><img src="{path}" alt="{html.escape(label)}"><figcaption>{html.escape(label)}'
                 "</figcaption></figure>" for label, path in timelines]
    return triage_page("killtest results", lines, views, passing, [f"{name}.json", f"{name}.md", "history/"],
                       extra="\n".join(body), none="No run broke a promise",  # the verdict above may still fail
                       unproved=unproved)


def exploration_markdown(exploration, command: str, replay: Callable[[Broken], str] = lambda b: b.point) -> str:
    """The crash points of `killtest explore`: the distinct failures first, then every point, broken ones first."""
    failures = point_failures(exploration.outcomes)
    judged = ("every idempotence promise (--strict)" if getattr(exploration, "strict", False)
              else "the promises its spec makes")
    waived = waived_line(exploration.outcomes)
    lines = ["# killtest explore", "", f"Command: `{command}`", "",
             f"Design **{exploration.design}**, held to {judged}: {exploration_header(exploration.outcomes, failures)};"
             f" {exploration.schedules_per_minute} schedules a minute ({exploration.elapsed_s:.1f} s in all,"
             f" {'pre-forked starts' if exploration.prefork else 'a new interpreter per start'}"
             + (f"; {located}" if (located := locating_words(exploration)) else "")
             + ").", "",
             *([waived, ""] if waived else []),
             *([promised, ""] if (promised := by_promise_line(failures)) else []),
             "Each point is one run: the first start is killed exactly there, the next start finishes the crawl,"
             f" and the outcome is held to the design's promises. {LEGEND}.", "",
             *failures_markdown(failures, replay),
             *coverage_markdown(getattr(exploration, "coverage", {})),
             "## Every crash point", "",
             "| point | reached | verdict | where | rows | requests |", "| --- | --- | --- | --- | --- | --- |"]
    ordered = sorted(exploration.outcomes, key=lambda o: o.valid)
    for o in ordered:
        verdict = "ok" if o.valid else "; ".join(o.problems)
        lines.append(f"| `{o.point}` | {'yes' if o.landed else 'no (crawl done first)'} | {verdict} |"
                     f" {getattr(o, 'where', '')} | {o.rows} | {o.requests} |")
    return "\n".join(lines) + "\n"
