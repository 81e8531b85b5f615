"""The triage page: one static HTML file beside a command's results (no server, no script from elsewhere),
the distinct failures first, each with its timeline, the keys the store got wrong against the site and the
replay line to copy; what passed summarised below. Antithesis' triage report is the model: properties
passed and failed, each failure with a moment to replay.

A failure reaches here as a plain dict (`failure_view`), so explore, fuzz and run share the page.
"""

from __future__ import annotations

import html

from killtest.harness.check.distinct import Failure, point_ranges
from killtest.harness.report.coverage_words import coverage_html
from killtest.harness.report.inline import inline_html
from killtest.harness.report.triage import (
    LEGEND,
    by_promise_line,
    exploration_header,
    failure_source,
    locating_words,
    marked_numbers,
    source_excerpt,
    waived_line,
)
from killtest.harness.report.triage_svg import LANES, lanes_drawn, timeline_svg

# A crawler's words may be in any script (feapder's and Scrapy's logs quote Chinese): each stack falls back, before
# the generic family, to fonts that hold CJK (Noto's, the platforms' own), so a quoted line is never boxes.
SANS = ('system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK SC","Noto Sans CJK JP","PingFang SC",'
        '"Hiragino Sans","Microsoft YaHei","Source Han Sans SC","WenQuanYi Micro Hei",sans-serif')
MONO = ('ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Noto Sans Mono","Noto Sans Mono CJK SC",'
        '"Noto Sans CJK SC","PingFang SC","Microsoft YaHei",monospace')
STYLE = (f"body{{font-family:{SANS};max-width:1100px;margin:2em auto;padding:0 1em;color:#222}}"
         f"code,pre{{font-family:{MONO}}}"
         "section.failure{border-left:4px solid #c53030;padding:.2em 1em;margin:1.5em 0;background:#fffafa}"
         "section.passing{border-left:4px solid #2f855a;padding:.2em 1em;background:#f7fffa}"
         "section.coverage{border-left:4px solid #2b6cb0;padding:.2em 1em;margin:1em 0;background:#f7faff}"
         "section.unproved{border-left:4px solid #b7791f;padding:.2em 1em;margin:1em 0;background:#fffdf5}"
         "pre.replay{background:#f4f4f4;padding:.6em;white-space:pre-wrap;word-break:break-all;user-select:all}"
         "table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ccc;padding:.25em .5em;"
         "text-align:left;vertical-align:top}th{background:#f4f4f4}svg.timeline{max-width:100%;height:auto}"
         "code{background:#f4f4f4;padding:0 .2em}img{max-width:100%}figure{margin:1em 0}"
         "pre.source{background:#f8f8f8;padding:.4em .6em;border:1px solid #ddd}pre.source b{background:#fde8e8}")


def failure_view(failure: Failure, replay: str, timeline: dict | None = None, keys: dict | None = None,
                 noun: str = "point", counts: dict | None = None) -> dict:
    """What the page shows of one distinct failure; `noun`: what it covers (points, schedules, runs); `counts`:
    how many keys each list of `keys` stands for, when the list holds only the first few."""
    example = failure.example
    by_place = failure.by_place() if failure.line else []
    return {"title": failure.title, "promises": list(failure.promises),
            "place": failure.place, "count": len(failure.points),
            "points": failure.points_text(), "line": failure.line, "lines": failure_source(failure),
            "source": source_excerpt(failure_source(failure)) if failure.line else [],
            "by_place": [(place, point_ranges(b.point for b in points)) for place, points in by_place]
            if len(by_place) > 1 else [],
            "example": example.point, "where": example.where, "replay": replay, "timeline": timeline or {},
            "keys": keys or {}, "noun": noun, "counts": counts or {}}


def _inline(text: str) -> str:
    return inline_html(text, emphasis=False)


def _keys_table(keys: dict, counts: dict | None = None) -> str:
    """A row per kind of wrong key: its count, and the keys themselves, saying so when they are the first few."""
    rows = [(kind, values) for kind, values in keys.items() if values]
    if not rows:
        return "<p>No key is lost, unstored, duplicated, wrong or unreadable against the site (the finding is about" \
               " requests or the run).</p>"
    words = {"lost": "lost (on the site, not in the store after a crawl that finished or a start that crashed)",
             "not_stored_unfinished": "not stored (the crawl did not finish: not counted as lost)",
             "duplicated": "duplicated (more than one row)",
             "unexpected": "wrong or not on the site", "unreadable": "unreadable (a torn row: which, and its key"
             " where its text still says)"}
    body = ""
    for kind, values in rows:
        count = max((counts or {}).get(kind) or 0, len(values))
        shown = ", ".join(map(str, values)) + (f", … ({count - len(values)} more)" if count > len(values) else "")
        body += (f"<tr><th>{html.escape(words.get(kind, kind))}: {count}</th><td>{html.escape(shown)}</td></tr>")
    return f"<table class=\"keys\">{body}</table>"


def _source(lines: list[str], excerpt: list, place: str) -> str:
    """The failure's own line (or lines) of the program, bold, with its neighbours, as read from the program's
    file; `...` where two lines are far apart."""
    at = set(marked_numbers(lines))
    width = len(str(excerpt[-1][0]))
    shown = []
    for i, (n, text) in enumerate(excerpt):
        if i and n > excerpt[i - 1][0] + 1:
            shown.append(f"{'.' * width} |")
        row = f"{n:>{width}} | {html.escape(text)}"
        shown.append(f"<b>{row}</b>" if n in at else row)
    body = "\n".join(shown)
    return f'<p>At <code>{html.escape(place)}</code>:</p><pre class="source">{body}</pre>'


def _failure_section(number: int, view: dict, lanes: tuple[str, ...] | None = None) -> str:
    parts = [f'<section class="failure" id="failure-{number}" data-point="{html.escape(view["example"])}">',
             f"<h2>{number}. {_inline(view['title'])}</h2>",
             f"<p>Broke <strong>{html.escape(', '.join(view['promises']))}</strong>"
             f" at {view['count']} {view['noun']}{'s' if view['count'] != 1 else ''}:"
             f" <code>{html.escape(view['points'])}</code>.</p>",
             f"<p>Smallest and earliest: <code>{html.escape(view['example'])}</code>"
             f"{', ' + html.escape(view['where']) if view['where'] else ''}.</p>"]
    if view.get("source"):
        lines = view.get("lines") or [view["line"]]
        parts.append(_source(lines, view["source"], view["place"] if len(lines) > 1 else view["line"]))
    if view.get("by_place"):
        parts.append("<p>By kind of write (which one the kill landed before):</p><ul>"
                     + "".join(f"<li>{html.escape(place)}: <code>{html.escape(points)}</code></li>"
                               for place, points in view["by_place"]) + "</ul>")
    if view["timeline"]:
        parts.append(timeline_svg(view["timeline"], f"timeline of {view['example']}", lanes))
    parts.append(_keys_table(view["keys"], view.get("counts")))
    if view["replay"]:
        parts.append(f'<p>Replay it:</p><pre class="replay">{html.escape(view["replay"])}</pre>')
    parts.append("</section>")
    return "\n".join(parts)


def triage_page(title: str, lines: list[str], failures: list[dict], passing: list[str], links: list[str],
                extra: str = "", none: str = "No failure", unproved: list[str] | None = None) -> str:
    """The whole page: `lines` (Markdown-ish: `code`) under the title, the failures (or the heading `none`), then
    what proved nothing (`unproved`, a box of its own: it neither passed nor broke a promise), then what passed
    (no box when nothing did), then `extra` (HTML: a campaign's tables and plots)."""
    body = [f"<h1>{html.escape(title)}</h1>"] + [f"<p>{_inline(line)}</p>" for line in lines]
    if links:
        body.append("<p>" + " · ".join(f'<a href="{html.escape(link)}">{html.escape(link)}</a>' for link in links)
                    + "</p>")
    if failures:
        body.append(f"<h2>Distinct failures ({len(failures)})</h2>")
        lanes = lanes_drawn([view["timeline"] for view in failures if view["timeline"]])
        if left_out := _lanes_left_out(lanes, failures):
            body.append(f"<p>{html.escape(left_out)}</p>")
        body += [_failure_section(number, view, lanes) for number, view in enumerate(failures, 1)]
    else:
        body.append(f"<h2>{html.escape(none)}</h2>")
    if unproved:
        body.append('<section class="unproved"><h2>What proved nothing</h2>'
                    + "".join(f"<p>{_inline(line)}</p>" for line in unproved) + "</section>")
    if passing:
        body.append('<section class="passing"><h2>What passed</h2>'
                    + "".join(f"<p>{_inline(line)}</p>" for line in passing) + "</section>")
    if extra:
        body.append(extra)
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _lanes_left_out(lanes: tuple[str, ...], failures: list[dict]) -> str:
    """Once for the page: the timelines' lanes left out, none of their runs having an event in them, and why."""
    if not any(view["timeline"] for view in failures):
        return ""
    gone = [(kind, name) for kind, name, _ in LANES if kind not in lanes]
    if not gone:
        return ""
    why = {"write": "records stored (no run's store gave a record's write time: the spec's [store] written_at)"}
    named = [why.get(kind, name) for kind, name in gone]
    return "The timelines leave out the lanes no run below has an event in: " + ", ".join(named) + "."


def exploration_page(exploration, command: str, failures: list[Failure], replay, name: str) -> str:
    """explore-DESIGN.html: an exploration's distinct failures (campaigns/exploration.Exploration, duck-typed)."""
    by_point = {o.point: o for o in exploration.outcomes}
    views = [failure_view(f, replay(f.example), by_point[f.example.point].timeline, by_point[f.example.point].keys,
                          counts=getattr(by_point[f.example.point], "key_counts", None)) for f in failures]
    judged = "every idempotence promise (--strict)" if exploration.strict else "the promises its spec makes"
    counted = exploration_header(exploration.outcomes, failures)
    took = f" {exploration.elapsed_s:.1f} s in all; {located}." if (located := locating_words(exploration)) else ""
    lines = [f"Command: `{command}`", f"Design **{exploration.design}**, held to {judged}: {counted}.{took}",
             *([w] if (w := waived_line(exploration.outcomes)) else []),
             *([b] if (b := by_promise_line(failures)) else []), LEGEND + "."]
    # a store-write kill that landed at another write than its point's kept every promise there, but its own
    # write was never cut: it proved nothing about that write, so it is no pass (and no failure)
    off_aim = [o.point for o in exploration.outcomes if o.valid and o.landed and getattr(o, "off_aim", "")]
    kept = [o.point for o in exploration.outcomes if o.valid and o.landed and o.point not in off_aim]
    unreached = [o.point for o in exploration.outcomes if not o.landed and o.valid]
    passing = [f"{len(kept)} point{'s' if len(kept) != 1 else ''} kept every promise: `{point_ranges(kept)}`."] \
        if kept else []
    unproved = ([f"{len(unreached)} not reached (the crawl finished first): `{point_ranges(unreached)}`."]
                if unreached else []) + \
        ([f"{len(off_aim)} landed off {'their' if len(off_aim) != 1 else 'its'} aim (at another store write than the"
          f" point names, so its own write was not cut): `{point_ranges(off_aim)}`."] if off_aim else [])
    return triage_page(f"killtest explore {exploration.design}", lines, views, passing,
                       [f"{name}.json", f"{name}.md"], unproved=unproved,
                       extra=coverage_html(getattr(exploration, "coverage", {})))
