"""The plan of `killtest fuzz`: search (in `jobs` processes), then shrink the first failure, once.

Search j of J draws `examples / J` cases with Hypothesis seed `seed + j - 1` on a bench of its own
(harness/campaigns/fuzzing.py); the failures are taken in search order, and the first is shrunk in this
process. The same seed and jobs give the same cases. A design that names a recording is fuzzed on
its replay, one per bench (so one per job), with only the schedule drawn. A store write is drawn before or
after it (`w45`, `aw45`); with `power_cut` the power-cut points are drawn too (campaigns/fuzz_schedules.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from killtest.harness.campaigns.fuzzing import FuzzResult, Trial, bench, search, shrink
from killtest.harness.campaigns.parallel import run_jobs
from killtest.harness.design.model import Design
from killtest.harness.running.runner import RunSettings

SHRINK_TRIES = 3  # failures a fuzz tries to shrink to an exact schedule before it reports one as found


def fuzz_design(design: Design, run_settings: RunSettings, *, examples: int, seed: int,
                max_seconds: float | None = None, jobs: int = 1, prefork: bool = True, work_dir: str | None = None,
                on_progress: Callable[[str], None] = lambda message: None, power_cut: bool = False) -> FuzzResult:
    """Search for a schedule that breaks a promise; shrink the first one found to the smallest that still does."""
    began = time.monotonic()
    result = FuzzResult(design.name)
    label = f"[fuzz {design.name}]"
    if jobs <= 1:
        with bench(design, run_settings, prefork=prefork, work_dir=work_dir, power_cut=power_cut) as on:
            result.trials = search(on, examples, seed, max_seconds, lambda t: on_progress(describe(label, t)))
            _shrink_first(result, on, label, on_progress)
    else:
        shares = [examples // jobs + (1 if j < examples % jobs else 0) for j in range(jobs)]
        parts = run_jobs(_search_part, [(design, run_settings, share, seed + j, max_seconds, prefork, work_dir,
                                         power_cut) for j, share in enumerate(shares) if share], jobs, on_progress)
        result.trials = [trial for part in parts for trial in part]
        if any(t.problems for t in result.trials):
            with bench(design, run_settings, prefork=prefork, work_dir=work_dir, power_cut=power_cut) as on:
                _shrink_first(result, on, label, on_progress)
    result.elapsed_s = time.monotonic() - began
    return result


def describe(label: str, trial: Trial) -> str:
    case = trial.case
    verdict = "ok" if not trial.problems else "FAIL: " + "; ".join(trial.problems)
    return f"{label} catalog {case.catalog}, schedule {case.schedule}: {verdict}"


def _shrink_first(result: FuzzResult, on: Any, label: str, on_progress: Callable[[str], None]) -> None:
    """Shrink the failures in turn, exact ones first, until one shrinks to an exact schedule (at most
    SHRINK_TRIES of them); else report the first failure as found, marked not exact."""
    failures = [t for t in result.trials if t.problems]
    if not failures:
        return
    result.failure = failures[0]
    # Exact failures first, and among them a lost or wrong record before a promise about requests.
    for failure in sorted(failures, key=lambda t: (not t.exact, not any("record" in p for p in t.problems)))[
            :SHRINK_TRIES]:
        on_progress(f"{label} shrinking {failure.case.schedule}")
        shrunk, runs = shrink(on, failure.case, lambda t: on_progress(describe(f"{label} shrink:", t)))
        result.shrink_runs += runs
        if result.shrunk is None or shrunk.exact:
            result.failure, result.shrunk = failure, shrunk
        if shrunk.exact:
            return


def _search_part(design: Design, run_settings: RunSettings, examples: int, seed: int, max_seconds: float | None,
                 prefork: bool, work_dir: str | None, power_cut: bool, lines: Any) -> list[Trial]:
    label = f"[fuzz {design.name} seed {seed}]"
    with bench(design, run_settings, prefork=prefork, work_dir=work_dir, power_cut=power_cut) as on:
        return search(on, examples, seed, max_seconds, lambda t: lines.put(describe(label, t)))
