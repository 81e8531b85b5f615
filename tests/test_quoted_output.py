"""A crawler's own words as they are (issue 45, item 6): quoted output is a code span in the Markdown and literal
on the page, never emphasis (`********** feapder end **********`), the page's fonts fall back to ones with CJK,
and `killtest serve` serves a shop of the size asked for and says what it is without pointing into docs/.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import urllib.request

from killtest.harness.check.complaint import quoted
from killtest.harness.report.inline import inline_html

FEAPDER = "********** feapder end **********"


def test_a_quoted_line_is_a_code_span_whatever_it_holds_and_the_page_keeps_it_literal():
    assert quoted(FEAPDER) == f"`{FEAPDER}`"
    assert quoted("a `b` c") == "``a `b` c``" and quoted("`x`") == "`` `x` ``"
    page = inline_html(f"**start 2** said: {quoted(FEAPDER)}; *then* {quoted('a `b` <c>')}")
    assert page == (f"<strong>start 2</strong> said: <code>{FEAPDER}</code>; <em>then</em>"
                    " <code>a `b` &lt;c&gt;</code>")
    assert inline_html(f"x {quoted('`x`')}") == "x <code>`x`</code>"


CRAWLER = textwrap.dedent("""\
    import json, os, sys, urllib.request

    base, out, mark = sys.argv[1], sys.argv[2], sys.argv[3]
    if os.path.exists(mark):  # the start after the kill
        print("爬虫结束: 任务异常", file=sys.stderr)
        print("%s", file=sys.stderr)
        sys.exit(1)
    open(mark, "w").close()
    urllib.request.urlopen(base + "/list/0").read()
    """) % FEAPDER


def test_a_crawlers_words_in_the_markdown_and_on_the_page_are_quoted_not_rendered(tmp_path):
    """A real run: the start after the kill prints a CJK line and feapder's end banner, and exits 1. The crash
    finding quotes the banner as a code span; the page shows it literally, in a font stack that holds CJK."""
    program, spec = tmp_path / "crawler.py", tmp_path / "design.toml"
    program.write_text(CRAWLER)
    command = json.dumps(["{python}", str(program), "{base_url}", "{store}", "{work_dir}/started"])
    spec.write_text(f'[design]\nname = "banner"\ncommand = {command}\n\n[store]\nkind = "jsonl"\n'
                    'path = "{work_dir}/records.jsonl"\nkey = "sku"\nfields = ["price", "name"]\n')
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", str(spec), "--runs", "1",
                           "--schedule", "r1", "--listing-pages", "1", "--per-page", "2", "--no-plot",
                           "--out", str(out)], capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"exited by itself with status 1: `{FEAPDER}`" in done.stderr
    markdown = (out / "killtest.md").read_text()
    assert f"`{FEAPDER}`" in markdown
    page = (out / "killtest.html").read_text()
    assert f"<code>{FEAPDER}</code>" in page and "<em>" not in page
    assert "feapder end" not in re.sub(r"<code>[^<]*</code>", "", page)  # only ever inside a code span
    fonts = re.search(r"body\{font-family:([^;]+);", page)[1]
    assert '"Noto Sans CJK SC"' in fonts and fonts.endswith("sans-serif")
    assert re.search(r'code,pre\{font-family:[^}]*"Noto Sans Mono CJK SC"[^}]*monospace\}', page)


def test_serve_takes_the_shops_size_and_says_it_without_a_docs_path(tmp_path):
    serve = subprocess.Popen([sys.executable, "-m", "killtest", "serve", "--listing-pages", "2", "--per-page", "5"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(tmp_path))
    try:
        line = serve.stdout.readline()
        assert "2 listing pages of 5 products, 10 product pages" in line and "a full crawl is 12 requests" in line
        assert "docs/" not in line
        base = re.search(r"(http://127\.0\.0\.1:\d+)/list/0", line)[1]
        second = urllib.request.urlopen(base + "/list/1", timeout=10).read().decode()
        assert len(set(re.findall(r'href="(/product/\d+)"', second))) == 5
        assert 'class="next"' not in second  # the last listing page of two
    finally:
        os.kill(serve.pid, signal.SIGINT)
        serve.wait(timeout=30)
    refused = subprocess.run([sys.executable, "-m", "killtest", "serve", "--per-page", "0"], capture_output=True,
                             text=True, timeout=60)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr and "--per-page" in refused.stderr
