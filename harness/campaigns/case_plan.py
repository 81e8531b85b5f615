"""The plan of `killtest cases`: each case's releases, each run several times, inside that release's env.

A run is its own `python -m killtest run --design <case design> <case args> --out <folder>` with the
release's env first on PATH (and NODE_PATH for node): the same command a user would paste, so nothing of
the case's framework is imported into killtest's own interpreter. `killtest cases` runs each release's
aimed schedule n times and n runs of timed kills spread over its crawl (case_runs.py: `run_release_sets`);
a bisection and a report run the aimed schedule once (`run_release`).

Which verdict a release gets, and why. A release's `as_expected` is judged on its aimed runs only: they
are the case's claim (this write, this request, loses on this release and not on that one), while the
spread-kill runs measure how often timed kills, not aimed at the bug, find it (printed, never judged: a
fixed release flagged under spread kills is a finding to show, not the case's claim failing). A release
expecting findings must show every one of them (others may come with them: a lost request often leaves
the crawl unfinished too) in at least the case's `expect_share` of its aimed runs, by default every one:
an aimed point is exact, so a run that misses the bug is news, and a case whose bug is a race says so in
its case.toml; a release expecting none must be valid in every aimed run (a run that proved nothing does
not count as clean). The release's single figures (rows, missing, duplicated, kills, outcome) are the
aimed run its replay line reproduces: the first flagged one, else the first; `frequencies` holds each
set's ranges and medians (report/case_frequencies.py) and `runs` every run's record.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from killtest.harness import lifeline
from killtest.harness.campaigns.case_envs import CaseEnv
from killtest.harness.campaigns.case_installed import installed
from killtest.harness.design.case_spec import Case, Release
from killtest.harness.design.registry import PROJECT_ROOT, design_named
from killtest.harness.options import options_of
from killtest.harness.servers.for_stores import StoreServers

EXIT_INTERRUPTED = 130


@dataclass
class ReleaseOutcome:
    """What one release of one case showed, beside what it was expected to show."""

    case: str
    version: str
    label: str
    design: str  # the design spec, relative to the case folder
    packages: list[str]
    expect: list[str]
    role: str = ""  # buggy, fixed, before the bug, clean twin or control (case_spec.ROLES)
    validity: str = "unknown"  # valid | invalid | unknown | error (the run itself failed to run)
    got: list[str] = field(default_factory=list)  # the findings of every run, each once, in order
    as_expected: bool = False
    rows: int = 0
    products: int = 0
    missing: int = 0
    duplicated: int = 0
    kills: int = 0
    outcome: str = ""  # the runs' outcomes (completed, timed_out ...), comma-joined
    seconds: float = 0.0  # the release's runs, all of them, as run (at -j), env build excluded
    command: str = ""  # the `killtest run` line, with the env assignments it needs
    replay: str | None = None  # for a flagged run: the `killtest replay` line, with the env assignments
    out: str = ""
    error: str = ""
    # What the env held (case_installed): every package as name==version, and the pins' own dependencies.
    installed: list[str] = field(default_factory=list)
    dependencies: list[str] = field(default_factory=list)
    measured_at: str = ""  # when the release's run started, UTC (2026-12-04T15:59:12Z)
    killtest_commit: str | None = None  # the checkout's commit (`-dirty`: its code had changes); None: not a checkout
    root: str = ""  # the checkout it ran from, so the analyses page can leave it out of its lines anywhere
    repeat: int = 1  # runs a set
    expect_share: float = 1.0  # of the aimed runs, the share that must show `expect` (case.toml; 1.0: every one)
    runs: list[dict] = field(default_factory=list)  # every run's record (case_frequencies.run_records)
    frequencies: dict = field(default_factory=dict)  # {"aimed": summary, "spread": summary or None}
    spread_note: str = ""  # the case's reason for fewer spread kills, or none
    spread_command: str = ""  # spread-kill run 1's `killtest run` line
    spread_replay: str | None = None  # the first flagged spread-kill run's replay line

    @property
    def key(self) -> str:
        return self.version + (f" ({self.label})" if self.label else "")

    def to_json(self) -> dict:
        return asdict(self)


def killtest_word() -> str:
    """How a pasted line calls killtest: `killtest` when the one on PATH is this one, else its full path."""
    ours = os.path.join(os.path.dirname(sys.executable), "killtest")
    on_path = shutil.which("killtest")
    if on_path and os.path.realpath(on_path) == os.path.realpath(ours):
        return "killtest"
    return ours if os.path.exists(ours) else "killtest"


def killtest_commit() -> str | None:
    """The commit of the checkout this killtest runs from, `-dirty` when its code (not results/ or docs/)
    differs from it; None for an installed wheel or where git is missing."""
    def git(*words: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", PROJECT_ROOT, *words], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None
    head = git("rev-parse", "--short", "HEAD") if os.path.exists(os.path.join(PROJECT_ROOT, ".git")) else None
    if not head:
        return None
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!results", ":!docs")
    return head + ("-dirty" if changed else "")


def check_requirements(cases: list[Case], release: str | None = None) -> None:
    """What this killtest lacks for a selected design (the redis extra for a BullMQ case): one line before
    anything runs, not an error per release after the others' envs were built and run."""
    StoreServers([design_named(rel.design) for case in cases for rel in case.releases
                  if release is None or release in (rel.version, rel.key)])  # checks, starts nothing


def run_release(case: Case, rel: Release, env: CaseEnv, out: str, say: Callable[[str], None],
                folder: str | None = None, extra_env: dict[str, str] | None = None) -> ReleaseOutcome:
    """One release's `killtest run` (into `folder`, by default <out>/cases/<case>/<release>; with `extra_env`
    added to its environment), its killtest.json read and judged against `expect`."""
    folder = os.path.abspath(folder or os.path.join(out, "cases", case.name, rel.key))
    os.makedirs(folder, exist_ok=True)
    words = ["run", "--design", rel.design, *case.args, "--no-plot", "--out", folder]
    outcome = new_outcome(case, rel, env, folder, words)
    say(f"[{case.name} {rel.key}] killtest run ... (log: {os.path.join(folder, 'killtest.log')})")
    report = os.path.join(folder, "killtest.json")
    if os.path.exists(report):
        os.remove(report)  # a result of an earlier run must not pass for this one's
    started = time.monotonic()
    status = _run_logged([sys.executable, "-m", "killtest", *words], {**env.environ(), **(extra_env or {})},
                         os.path.join(folder, "killtest.log"))
    outcome.seconds = round(time.monotonic() - started, 1)
    if status == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if status not in (0, 1) or not os.path.exists(report):
        outcome.validity = "error"
        outcome.error = last_line(os.path.join(folder, "killtest.log")) or f"killtest run exited {status}"
        return outcome
    read_report(outcome, report, env, case.args)
    return outcome


def new_outcome(case: Case, rel: Release, env: CaseEnv, folder: str, words: list[str] | tuple[str, ...]
                 ) -> ReleaseOutcome:
    outcome = ReleaseOutcome(case=case.name, version=rel.version, label=rel.label,
                             design=os.path.relpath(rel.design, case.folder), packages=list(rel.packages),
                             expect=list(rel.expect), role=rel.role, out=folder, command=run_line(env, words),
                             measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                             killtest_commit=killtest_commit(), root=PROJECT_ROOT)
    held = installed(case.runtime, env.root, rel.packages)
    outcome.installed, outcome.dependencies = held["all"], held["direct"]
    return outcome


def run_line(env: CaseEnv, words: list[str] | tuple[str, ...]) -> str:
    return f"{env.shell_prefix()} {shlex.join([killtest_word(), *words])}"


def replay_line(campaign: dict, env: CaseEnv, case_args: tuple[str, ...]) -> str | None:
    """The replay line of a killtest.json's first flagged run, with the env assignments it needs; None if none."""
    replays = (campaign.get("settings", {}).get("replays") or {})
    flagged = next((run for run in campaign.get("runs", []) if not run.get("valid", True)), None)
    if flagged is None:
        return None
    lines = replays.get(flagged.get("design"), [])
    line = lines[flagged.get("run", 1) - 1] if 0 < flagged.get("run", 1) <= len(lines) else None
    if not line:
        return None
    words = _replay_words(line, case_args)
    if words and words[0] == "killtest":
        words[0] = killtest_word()
    return f"{env.shell_prefix()} {shlex.join(words)}"


def _replay_words(line: str, case_args: tuple[str, ...]) -> list[str]:
    """`run`'s replay line, plus the case's options that replay takes but `run` does not repeat (a case's
    --no-progress-timeout): pasted, the line must meet the same patience as the run it reproduces."""
    words = shlex.split(line)
    takes = {o.flag: o for o in options_of("replay")}
    i = 0
    while i < len(case_args):
        flag, _, value = case_args[i].partition("=")
        option = takes.get(flag)
        switch = option is not None and option.action == "store_true"
        if option is not None and flag not in words:
            words += [flag] if switch else [flag, value or case_args[i + 1]]
        i += 1 if switch or value or option is None else 2
    return words


def read_report(outcome: ReleaseOutcome, path: str, env: CaseEnv, case_args: tuple[str, ...]) -> None:
    with open(path, encoding="utf-8") as src:
        campaign = json.load(src)
    runs = campaign.get("runs", [])
    validities = {run.get("validity", "valid" if run.get("valid") else "invalid") for run in runs}
    outcome.validity = ("invalid" if "invalid" in validities else "unknown" if "unknown" in validities or not runs
                        else "valid")
    outcome.got = list(dict.fromkeys(code for run in runs for code in run.get("findings", [])))
    outcome.rows = sum(run.get("rows", 0) for run in runs)
    outcome.products = campaign.get("settings", {}).get("products", 0) * max(len(runs), 1)
    outcome.missing = sum(run.get("missing_records", 0) for run in runs)
    outcome.duplicated = sum(run.get("duplicated_records", 0) for run in runs)
    outcome.kills = sum(run.get("kills", 0) for run in runs)
    outcome.outcome = ",".join(dict.fromkeys(run.get("outcome", "") for run in runs))
    if outcome.expect:
        outcome.as_expected = outcome.validity == "invalid" and set(outcome.expect) <= set(outcome.got)
    else:
        outcome.as_expected = outcome.validity == "valid"
    outcome.replay = replay_line(campaign, env, case_args)


def _run_logged(command: list[str], environ: dict[str, str], log: str) -> int:
    """Run `command` with its output in `log`; on Ctrl+C or SIGTERM it is stopped (SIGTERM: it cleans up)."""
    lifeline.ensure_watchdog()
    with open(log, "w", encoding="utf-8") as sink:
        # A session of its own, told to the watchdog: if this killtest is SIGKILLed, it goes too.
        child = subprocess.Popen(command, env=environ, stdout=sink, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        lifeline.register(child.pid)
        try:
            return child.wait()
        except BaseException:
            stop_children([child])
            raise


def stop_children(children: list[subprocess.Popen]) -> None:
    """Each child still running told SIGTERM (a killtest cleans up on it), its group SIGKILLed after 60 s."""
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in children:
        try:
            child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


def last_line(path: str) -> str:
    """The last line of a log that is not blank (a failed run's one-line error); empty when there is none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as src:
            lines = [line.strip() for line in src if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""
