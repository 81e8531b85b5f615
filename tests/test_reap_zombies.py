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

import pytest

# A parent that is a child subreaper and reaps nothing while killtest runs, as a pytest worker is.
SUBREAPER = """
import ctypes, subprocess, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
sys.exit(subprocess.run(sys.argv[1:]).returncode)
"""


@pytest.mark.slow
def test_a_run_under_a_subreaper_that_does_not_reap_finishes(tmp_path, idempotent_behind_shell):
    spec = tmp_path / "design.toml"  # the scraper's start leaves a child behind in its group
    spec.write_text(idempotent_behind_shell("leaves-a-child", 'sleep 300 & exec "$0" "$@"'))
    done = subprocess.run(
        [sys.executable, "-c", SUBREAPER, sys.executable, "-m", "killtest", "run", "--design", str(spec),
         "--runs", "1", "--schedule", "r3,r7", "--listing-pages", "2", "--per-page", "3", "--no-plot",
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "survived SIGKILL" not in done.stderr
