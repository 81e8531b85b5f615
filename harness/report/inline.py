"""The little Markdown the reports' own sentences use (`code`, **bold**, *emphasis*) as HTML, with code spans taken
literally: a crawler's own words are quoted in code spans (check/complaint.quoted), and what is inside one is never
read as emphasis. `********** feapder end **********` stays ten asterisks, a space and two words on the page.
"""

from __future__ import annotations

import html
import re

# A code span: a run of backticks, the text, the same run again (not one backtick longer): CommonMark's rule.
_CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def inline_html(text: str, emphasis: bool = True) -> str:
    """`text` as HTML: code spans as <code> with their text escaped and nothing else done to it; outside them,
    the text escaped, then **bold** (and *emphasis*, unless `emphasis` is False) made HTML."""
    out, at = [], 0
    for found in _CODE.finditer(text):
        out.append(_words(text[at:found.start()], emphasis))
        code = found[2]
        if len(code) > 2 and code.startswith(" ") and code.endswith(" "):
            code = code[1:-1]  # the padding a span around a backtick needs
        out.append(f"<code>{html.escape(code)}</code>")
        at = found.end()
    out.append(_words(text[at:], emphasis))
    return "".join(out)


def _words(text: str, emphasis: bool) -> str:
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", html.escape(text))
    return re.sub(r"\*([^*]+)\*", r"<em>\1</em>", text) if emphasis else text
