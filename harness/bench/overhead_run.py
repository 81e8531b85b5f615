"""The harness's own cost in the main job: run `make killtest`'s command and time it from outside."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from killtest.harness.design.model import PROJECT_ROOT
from killtest.harness.running.phase_clock import overhead_breakdown

# The experiment `make killtest` runs (keep in step with the Makefile's EXPERIMENT and killtest target).
MAKE_KILLTEST_ARGS = ["run", "--design", "naive", "--design", "idempotent", "--runs", "5", "--kills", "10",
                      "--seed", "1", "--lease", "3", "--check-faster", "--baseline", "results/baseline.json"]


def measure_overhead(out_dir: str, progress) -> dict:
    """Run the main job's command once, timed from before its interpreter starts to its exit."""
    directory = os.path.join(out_dir, "overhead")
    command = [sys.executable, "-m", "killtest", *MAKE_KILLTEST_ARGS, "--out", directory]
    progress.step("[overhead] running make killtest's command, timed from outside")
    began = time.monotonic()
    done = subprocess.run(command, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    total_s = time.monotonic() - began
    if done.returncode not in (0, 1):  # 1: a check failed; the timing still stands
        raise RuntimeError(f"the killtest run failed: {done.stderr.strip().splitlines()[-1:]}")
    with open(os.path.join(directory, "killtest.json"), encoding="utf-8") as report:
        breakdown = overhead_breakdown(json.load(report), total_s)
    breakdown["command"] = "killtest " + " ".join(MAKE_KILLTEST_ARGS)
    breakdown["passed"] = done.returncode == 0
    progress.done(f"[overhead] {breakdown['harness_s']} s of {breakdown['total_s']} s outside the scrapers"
                  f" ({100 * breakdown['ratio']:.1f}%)")
    return breakdown
