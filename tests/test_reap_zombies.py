"""A killed start's group counts as gone when what is left of it is only zombies that another process must reap.

When a start is SIGKILLed, a child it made (a browser driver, a `sleep &`) dies with it and is handed to the
nearest child subreaper above it. If that is not the harness (a pytest worker that pre-forked in an earlier
test, a supervisor), the zombie stays until that process reaps it: dead, running nothing, but still in the
group. The Playwright case met this under make test: "process group ... survived SIGKILL for 10s:
node-MainThread (zombie, parent <the pytest worker>)", and the run ended in an error.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SPEC = """
[design]
name = "leaves-a-child"
command = ["sh", "-c", "sleep 300 & exec \\"$0\\" \\"$@\\"",
           "{python}", "-m", "killtest.scrapers.idempotent", "--base", "{base_url}", "--db", "{store}",
           "--lease", "{lease_s}", "--crawl", "{crawl}"]

[store]
kind = "sqlite"
path = "{work_dir}/idempotent.sqlite"
records = \"\"\"SELECT json_extract(data, '$.sku') AS sku, json_extract(data, '$.price') AS price,
    json_extract(data, '$.name') AS name FROM records\"\"\"
key = "sku"
fields = ["price", "name"]
"""

# A parent that is a child subreaper and reaps nothing while killtest runs, as a pytest worker is.
SUBREAPER = """
import ctypes, subprocess, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
sys.exit(subprocess.run(sys.argv[1:]).returncode)
"""


def test_a_run_under_a_subreaper_that_does_not_reap_finishes(tmp_path):
    spec = tmp_path / "design.toml"
    spec.write_text(textwrap.dedent(SPEC))
    done = subprocess.run(
        [sys.executable, "-c", SUBREAPER, sys.executable, "-m", "killtest", "run", "--design", str(spec),
         "--runs", "1", "--schedule", "r3,r7", "--listing-pages", "2", "--per-page", "3", "--no-plot",
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "survived SIGKILL" not in done.stderr
