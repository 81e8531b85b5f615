"""A release's runs: its aimed schedule repeated, and timed kills spread over its crawl, each its own `killtest run`.

One run of a release is a verdict a maintainer can dismiss as luck. So each release runs two sets of
runs (case_plan.run_release), each run a `killtest run --runs 1` of its own, in a folder of its own
(<release folder>/aimed-<i>/, spread-<i>/), so that any one of them can be read and replayed alone:

- **aimed**: the case's args as they are, its `--schedule` aimed at the write or request where the bug
  lies, `n` times (seeds 1..n: the schedule is exact, the seed moves only what it draws, toxics say);
- **spread**: the case's args without `--schedule` (and `--runs`), so killtest measures the release's
  crawl from one unkilled start and spreads its kills over it (`--kill-delay f0.2~HIGH:WAIT`, the
  default for a design of one's own: harness/running/pace.py), `n` times, seeds 1..n. The case's
  `--time-limit` goes too: it was sized for the aimed points' one or two kills, and killtest's measured
  limit (every kill at its latest plus three crawls, never below the default) is sized for ten; with the
  case's 60 s a loaded machine's spread runs of apify 4.0.2 and crawlee-python 1.6.1 timed out (liveness)
  or could not even measure the crawl, which said nothing about the framework. A case whose runs wait out a
  framework's lock, which one unkilled start cannot measure, sets `spread_kills` in its case.toml, with
  `spread_note` saying why (0: no spread set), and keeps its own --time-limit; the page prints the note.

`n` is the command's --repeat (default 5), at most the case's own `repeat`. Runs go `jobs` at a time: a
run of a case mostly waits (on a site's pace, a framework's lock), and each has its own site, store and
ports, since each is a `killtest run` process of its own.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from killtest.harness import defaults, lifeline
from killtest.harness.campaigns.case_envs import CaseEnv, ensure_env
from killtest.harness.campaigns.case_plan import (
    ReleaseOutcome,
    check_requirements,
    last_line,
    new_outcome,
    read_report,
    replay_line,
    run_line,
    stop_children,
)
from killtest.harness.design.case_spec import Case, Release
from killtest.harness.report.case_frequencies import aggregate, run_records, shows_expected

# The options a run's set decides, dropped from the case's args: each run is one run of its own seed, and a
# spread run has no schedule.
_EACH_RUN = ("--runs", "--seed")
_SPREAD_DROPS = (*_EACH_RUN, "--schedule", "--kills")


@dataclass(frozen=True)
class PlannedRun:
    """One `killtest run` of a release: its set, its number in the set, its words after `killtest`, its folder."""

    kind: str  # aimed | spread
    index: int  # 1-based
    words: tuple[str, ...]
    folder: str


def without(args: tuple[str, ...], flags: tuple[str, ...]) -> list[str]:
    """`args` with each of `flags` and its value left out (`--flag value` and `--flag=value` alike)."""
    kept: list[str] = []
    skip = False
    for word in args:
        if skip:
            skip = False
            continue
        flag, eq, _ = word.partition("=")
        if flag in flags:
            skip = not eq
            continue
        kept.append(word)
    return kept


def repeat_of(case: Case, repeat: int | None) -> int:
    """Runs a set for `case`: the command's --repeat (default 5), at most the case's own `repeat`."""
    wanted = repeat if repeat is not None else defaults.CASE_REPEAT
    return min(wanted, case.repeat) if case.repeat is not None else wanted


def planned_runs(case: Case, rel: Release, folder: str, repeat: int, spread: bool = True) -> list[PlannedRun]:
    """The release's aimed runs, then its spread-kill runs (none when the case sets spread_kills = 0, or without
    `spread`: `killtest cases --aimed-only`)."""
    runs = []
    for i in range(1, repeat + 1):
        out = os.path.join(folder, f"aimed-{i}")
        runs.append(PlannedRun("aimed", i, ("run", "--design", rel.design, *without(case.args, _EACH_RUN),
                                            "--runs", "1", "--seed", str(i), "--no-plot", "--out", out), out))
    if case.spread_kills == 0 or not spread:
        return runs
    own = case.spread_kills is not None  # the case's own spread plan keeps its time limit
    kills = ("--kills", str(case.spread_kills)) if own else ()
    args = without(case.args, _SPREAD_DROPS + (() if own else ("--time-limit",)))
    for i in range(1, repeat + 1):
        out = os.path.join(folder, f"spread-{i}")
        runs.append(PlannedRun("spread", i, ("run", "--design", rel.design, *args, *kills, "--runs", "1", "--seed",
                                             str(i), "--no-plot", "--out", out), out))
    return runs


@dataclass
class Finished:
    """A planned run once it ended: its exit status, its wall time, its killtest.json (None: it wrote none)."""

    run: PlannedRun
    status: int
    wall_s: float
    campaign: dict | None

    def records(self) -> list[dict]:
        """Its runs' records (case_frequencies.run_records); one record of validity `error` when it did not run."""
        if self.campaign is None or self.status not in (0, 1):
            return [{"kind": self.run.kind, "validity": "error", "flagged": False, "findings": [], "rows": 0,
                     "lost": 0, "duplicated": 0, "not_stored": 0, "kills_landed": 0, "kills_planned": 0,
                     "killed_starts": 0, "killed_storing": 0, "outcome": "", "landed_schedule": "",
                     "wall_s": round(self.wall_s, 1), "error": last_line(self.log), "index": self.run.index,
                     "folder": self.run.folder}]
        return [{**r, "index": self.run.index, "folder": self.run.folder}
                for r in run_records(self.campaign, self.run.kind, self.wall_s)]

    @property
    def log(self) -> str:
        return os.path.join(self.run.folder, "killtest.log")


def run_all(runs: list[PlannedRun], command: list[str], environ: dict[str, str], jobs: int) -> list[Finished]:
    """Every planned run as `command + words`, `jobs` at a time, each logged to its folder's killtest.log; in
    the order planned. On Ctrl+C or SIGTERM every run still going is stopped (SIGTERM: it cleans up) and the
    interrupt raised; a run that exits 130 (interrupted itself) is an interrupt too."""
    lifeline.ensure_watchdog()
    waiting = list(runs)
    going: dict[subprocess.Popen, tuple[PlannedRun, float, IO[str]]] = {}
    done: dict[PlannedRun, Finished] = {}
    try:
        while waiting or going:
            while waiting and len(going) < max(jobs, 1):
                run = waiting.pop(0)
                os.makedirs(run.folder, exist_ok=True)
                report = os.path.join(run.folder, "killtest.json")
                if os.path.exists(report):
                    os.remove(report)  # a result of an earlier run must not pass for this one's
                sink = open(os.path.join(run.folder, "killtest.log"), "w", encoding="utf-8")  # noqa: SIM115
                child = subprocess.Popen([*command, *run.words], env=environ, stdout=sink, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
                lifeline.register(child.pid)
                going[child] = (run, time.monotonic(), sink)
            time.sleep(0.2)
            for child in [c for c in going if c.poll() is not None]:
                run, began, log = going.pop(child)
                log.close()
                if child.returncode == 130:
                    raise KeyboardInterrupt
                done[run] = Finished(run, child.returncode, time.monotonic() - began, _read(run.folder))
    except BaseException:
        stop_children(list(going))
        raise
    return [done[run] for run in runs]


def _read(folder: str) -> dict | None:
    try:
        with open(os.path.join(folder, "killtest.json"), encoding="utf-8") as src:
            return json.load(src)
    except (OSError, ValueError):
        return None


def run_cases(cases: list[Case], out: str, release: str | None = None, rebuild: bool = False,
              say: Callable[[str], None] = print, done: Callable[[ReleaseOutcome], object] | None = None,
              repeat: int | None = None, jobs: int = 1, aimed_only: bool = False) -> list[ReleaseOutcome]:
    """Every release of every case (just `release`, when given), in order, each its runs (run_release_sets);
    the env of each built first. `done` is told each outcome as it comes (the command prints it and keeps it
    if the rest is interrupted)."""
    outcomes = []
    check_requirements(cases, release)
    for case in cases:
        for rel in case.releases:
            if release is not None and release not in (rel.version, rel.key):
                continue
            env = ensure_env(case.runtime, rel.packages, rebuild=rebuild, say=say, patch=rel.patch)
            outcomes.append(run_release_sets(case, rel, env, out, say, repeat_of(case, repeat), jobs, aimed_only))
            if done is not None:
                done(outcomes[-1])
    return outcomes


def run_release_sets(case: Case, rel: Release, env: CaseEnv, out: str, say: Callable[[str], None], repeat: int,
                     jobs: int = 1, aimed_only: bool = False) -> ReleaseOutcome:
    """The release's aimed runs and spread-kill runs, `jobs` at a time, each in its folder under
    <out>/cases/<case>/<release>/, judged on its aimed runs (case_plan's docstring says how, and why)."""
    folder = os.path.abspath(os.path.join(out, "cases", case.name, rel.key))
    planned = planned_runs(case, rel, folder, repeat, spread=not aimed_only)
    outcome = new_outcome(case, rel, env, folder, planned[0].words)
    outcome.repeat, outcome.expect_share, outcome.spread_note = repeat, case.expect_share, case.spread_note
    if aimed_only:
        outcome.spread_note = "spread-kill runs not run: killtest cases --aimed-only"
    spread = [run for run in planned if run.kind == "spread"]
    outcome.spread_command = run_line(env, spread[0].words) if spread else ""
    say(f"[{case.name} {rel.key}] {repeat} aimed and {len(spread)} spread-kill runs, {jobs} at a time"
        f" (logs: {os.path.join(folder, '<set>-<i>', 'killtest.log')})")
    started = time.monotonic()
    finished = run_all(planned, [sys.executable, "-m", "killtest"], env.environ(), jobs)
    outcome.seconds = round(time.monotonic() - started, 1)
    outcome.runs = [record for done in finished for record in done.records()]
    sets = {kind: [r for r in outcome.runs if r["kind"] == kind] for kind in ("aimed", "spread")}
    outcome.frequencies = {kind: aggregate(records, outcome.expect) if records else None
                           for kind, records in sets.items()}
    aimed = [done for done in finished if done.run.kind == "aimed"]
    shown = next((d for d in aimed if any(r["flagged"] for r in d.records())), aimed[0])
    if all(r["validity"] == "error" for r in sets["aimed"]):
        outcome.validity, outcome.error = "error", sets["aimed"][0].get("error") or "killtest run failed"
        return outcome
    read_report(outcome, os.path.join(shown.run.folder, "killtest.json"), env, case.args)
    validities = {r["validity"] for r in sets["aimed"]}
    outcome.validity = next(v for v in ("invalid", "unknown", "error", "valid") if v in validities)
    outcome.got = list(dict.fromkeys(code for r in sets["aimed"] for code in r["findings"]))
    showing = sum(shows_expected(r, outcome.expect) for r in sets["aimed"])
    outcome.as_expected = (showing >= math.ceil(case.expect_share * len(sets["aimed"])) if outcome.expect
                           else showing == len(sets["aimed"]))
    outcome.spread_replay = next((replay_line(d.campaign, env, case.args) for d in finished
                                  if d.run.kind == "spread" and d.campaign is not None
                                  and any(r["flagged"] for r in d.records())), None)
    return outcome
