"""An exploration's coverage in words: the terminal's and the Markdown's lines, and the triage page's box.

The coverage itself (pages killed at, writes seen and explored per kind of file, what was left out and why) is
computed by harness/campaigns/coverage.py and reaches here as plain data. Each kind of file is said for what it is
(faults/file_roles.py): `store writes to records.jsonl`, `state writes to crawl_state.json`, `log writes to
crawl.log`, `cache writes to .crawl4ai/robots/robots_cache.db`, the store's first.
"""

from __future__ import annotations

import html


def coverage_lines(coverage: dict) -> list[str]:
    """`coverage: killed at 8 distinct pages of the 8 a crawl asks for (...)`, a line per kind of file written,
    and a `left out:` line per reason; nothing for an exploration that kept no coverage."""
    if not coverage:
        return []
    pages = coverage["pages_killed_at"]
    lines = [f"coverage: killed at {len(pages)} distinct page{'s' if len(pages) != 1 else ''} of the"
             f" {coverage['pages_asked']} a crawl asks for" + (f" ({_paths(pages)})" if pages else "")]
    for write in coverage["writes"]:
        lines.append(f"  {write.get('role', 'store')} writes to {write['file']}: {write['seen']} seen,"
                     f" {write['points']} explored"
                     + (f" (and {write['after_points']} after)" if write.get("after_points") else "")
                     + (f", {write['left_out']} left out" if write["left_out"] else ""))
    lines += [f"  left out: {why}" for why in coverage["left_out"]] or ["  left out: nothing"]
    return lines


def coverage_markdown(coverage: dict) -> list[str]:
    """The Markdown section: pages, a table of writes per kind of file, what was left out."""
    if not coverage:
        return []
    pages = coverage["pages_killed_at"]
    lines = ["## Coverage", "", f"Killed at {len(pages)} distinct page{'s' if len(pages) != 1 else ''} of the"
             f" {coverage['pages_asked']} a crawl asks for" + (f": {', '.join(f'`{p}`' for p in pages)}." if pages
                                                               else "."), ""]
    if coverage["writes"]:
        lines += ["| writes to | seen | explored | left out |", "| --- | --- | --- | --- |"]
        lines += [f"| `{w['file']}` ({w.get('role', 'store')}) | {w['seen']} | {_explored(w)} | {w['left_out']} |"
                  for w in coverage["writes"]]
        lines.append("")
    lines += [f"- left out: {why}" for why in coverage["left_out"]] or ["- left out: nothing"]
    return lines + [""]


def coverage_html(coverage: dict) -> str:
    """The page's coverage box: neither passed nor failed, what was tried and what was not."""
    if not coverage:
        return ""
    pages = coverage["pages_killed_at"]
    out = ['<section class="coverage"><h2>Coverage</h2>',
           f"<p>Killed at {len(pages)} distinct page{'s' if len(pages) != 1 else ''} of the {coverage['pages_asked']}"
           f" a crawl asks for{': ' + html.escape(', '.join(pages)) if pages else ''}.</p>"]
    if coverage["writes"]:
        out.append("<table><tr><th>writes to</th><th>seen</th><th>explored</th><th>left out</th></tr>"
                   + "".join(f"<tr><td><code>{html.escape(w['file'])}</code> ({w.get('role', 'store')})</td>"
                             f"<td>{w['seen']}</td>"
                             f"<td>{_explored(w)}</td><td>{w['left_out']}</td></tr>" for w in coverage["writes"])
                   + "</table>")
    reasons = coverage["left_out"] or ["nothing"]
    out.append("<ul>" + "".join(f"<li>left out: {html.escape(why)}</li>" for why in reasons) + "</ul></section>")
    return "".join(out)


def _explored(write: dict) -> str:
    """`4`, or `4 (and 4 after)`: the writes explored, and how many of them were killed after as well as before
    (their after twins, `aw5`; harness/faults/points/after_store_write.py)."""
    after = write.get("after_points", 0)
    return f"{write['points']}" + (f" (and {after} after)" if after else "")


def _paths(pages: list[str], most: int = 12) -> str:
    shown = ", ".join(pages[:most])
    return shown + (f", and {len(pages) - most} more" if len(pages) > most else "")
