"""`killtest cases --bisect CASE`: the releases where a case's verdict changes, found on as few releases as it needs.

The releases between two versions come from the registry (case_registry.py); each is run as `killtest
cases` runs a release (case_plan.run_release: the case's design, schedule and expectation of its first
buggy release, the env of its pins built once and cached), and its verdict is `flagged` (the run showed the
findings that release expects: the bug), `clean`, `flagged for X, not Y` (it broke a promise, but not with
the case's bug), or what kept it from saying any (`unknown`, `error`, `timed out`: a crawl that did not finish
counts nothing as lost, so it cannot tell a release without the loss from a slow one).

`search` is the bisection, a pure function of the releases and a verdict function, so it is tested on
made-up verdicts. It runs both ends and `probes` releases evenly spaced between them, then halves every
interval whose ends disagree until they are neighbours. A verdict that changes once is found in about
log2(n) runs. A verdict that changes more than once (a fix, then the bug back) shows as two intervals
that disagree; the search then says so and runs every release, since halving cannot tell how many
changes hide in an interval whose ends agree. `every` asks for that from the start. A change is the case's
bug appearing or going: a release broken by another finding is on the "no bug" side, its findings kept.

Every release is decided at the same write. A store write named by its number (`w14`) is the 14th write of a
start, which is another write on another release: crawlee-node-2085-locking's `w14` was a dataset item's
write on 3.9.x and a request's lock write from 3.10, so its two sides were decided at different writes. So
a bisection refuses a schedule that names a write by number; a case whose schedule does declares the point
the bisection kills at by its file in scrapers/cases/<case>/bisect.toml (`[point] schedule =
"w2:storage/request_queues/default/<id>.json"`, with `why`: the file is the same request's on every release,
its name a hash of the request's uniqueKey). A release on which the point is never reached (the start makes
fewer writes to that file: no kill landed) is "no verdict (point not reached)", said, and gone around, never
counted clean. The same file lists the releases upstream made that the registry lacks (`[[missing]]`,
case_registry.missing_between), so a boundary next to one names it.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from killtest.harness.campaigns.case_bisect_plan import bisect_plan, numbered_writes, schedule_of, with_schedule
from killtest.harness.campaigns.case_envs import ensure_env
from killtest.harness.campaigns.case_plan import ReleaseOutcome, killtest_commit, run_release
from killtest.harness.campaigns.case_registry import between, missing_between, moved_pins, releases, split_pin
from killtest.harness.design.case_spec import Case, Release
from killtest.harness.design.registry import PROJECT_ROOT
from killtest.harness.errors import KilltestError
from killtest.harness.history import events_in_folder, first_in_folder
from killtest.harness.report.case_bisect_table import missing_words

# The release did not install or its run proved nothing, or its crawl never finished: `lost` is only counted in a
# crawl that finished, so a run stopped by its time limit cannot say whether the case's loss is there.
TIMED_OUT = "timed out"
NOT_REACHED = "no verdict (point not reached)"  # no kill landed: the release never made the write the point names
NO_VERDICT = ("error", "unknown", TIMED_OUT, NOT_REACHED)
NON_MONOTONE = ("the verdict changes more than once between {first} and {last}: halving cannot count the changes"
                " between two releases that agree, so every release is run")


@dataclass
class Search:
    """What `search` ran and found: the verdict of each release run, by index, and the changes between
    neighbouring releases run (a change is complete when the two are neighbours in `versions`)."""

    versions: list[str]
    verdicts: dict[int, str]
    order: list[int]  # the indices in the order they were run
    every: bool  # every release was run (asked, or the verdict changed more than once)
    warning: str | None = None

    def changes(self) -> list[tuple[int, int]]:
        """Neighbours among the releases that gave a verdict (a release that did not install or run, `error`
        or `unknown`, says nothing of the bug, so it neither starts nor ends a change)."""
        ran = [i for i in sorted(self.verdicts) if self.verdicts[i] not in NO_VERDICT]
        return [(a, b) for a, b in zip(ran, ran[1:]) if has_bug(self.verdicts[a]) != has_bug(self.verdicts[b])]


def has_bug(verdict: str) -> bool:
    """The side of a change a verdict is on: the case's bug shown (`flagged`) or not (`clean`, or `flagged for
    X, not Y`: another finding, which each run's line keeps but which is not what the search looks for)."""
    return verdict == "flagged"


def search(versions: list[str], verdict: Callable[[str], str], every: bool = False, probes: int = 1,
           warn: Callable[[str], object] = print) -> Search:
    """The releases among `versions` (oldest first) to run, chosen as the verdicts come, until every change
    of verdict lies between two neighbours."""
    if not versions:
        raise KilltestError("no release to bisect")
    found = Search(list(versions), {}, [], every)

    def at(i: int) -> str:
        if i not in found.verdicts:
            found.verdicts[i] = verdict(versions[i])
            found.order.append(i)
        return found.verdicts[i]

    last = len(versions) - 1
    if every:
        for i in range(len(versions)):
            at(i)
        return found
    def nearest(target: int, lo: int, hi: int) -> None:
        """Run `target`, or when it gives no verdict the untried release nearest to it in [lo, hi], until
        one does (or none is left)."""
        for i in sorted(range(lo, hi + 1), key=lambda i: (abs(i - target), i)):
            if i not in found.verdicts and at(i) not in NO_VERDICT:
                return

    for i in sorted({0, last, *(round(k * last / (probes + 1)) for k in range(1, probes + 1))}):
        nearest(i, 0 if i < last else 1, last if i > 0 else last - 1)
    while True:
        wide = next(((a, b) for a, b in found.changes() if b - a > 1 and _untried(found, a, b)), None)
        if wide is None:
            break
        nearest((wide[0] + wide[1]) // 2, wide[0] + 1, wide[1] - 1)
    if len(found.changes()) > 1:
        found.warning = NON_MONOTONE.format(first=versions[0], last=versions[-1])
        warn(f"warning: {found.warning}")
        found.every = True
        for i in range(len(versions)):
            at(i)
    return found


def _untried(found: Search, a: int, b: int) -> bool:
    return any(i not in found.verdicts for i in range(a + 1, b))


@dataclass
class Bisection:
    """A case bisected: the registry's releases in the range, each one run with its verdict, the changes."""

    case: str
    package: str
    first: str
    last: str
    versions: list[str]
    runs: list[dict] = field(default_factory=list)  # in the order run: version, verdict, got, seconds, pins ...
    changes: list[dict] = field(default_factory=list)  # last with one verdict, first with the other
    every: bool = False
    warning: str | None = None
    point: str = ""  # the schedule every release ran: the case's, or its bisect.toml's [point]
    point_why: str = ""  # bisect.toml's word on why that point is the same write on every release
    # Upstream's releases in the range that the registry lacks (bisect.toml's [[missing]]: version, date, changes,
    # link, others), each with `after`, the registry's release before it (case_registry.missing_between).
    missing: list[dict] = field(default_factory=list)
    seconds: float = 0.0  # the whole bisection, env builds included
    command: str = ""
    measured_at: str = ""
    killtest_commit: str | None = None
    root: str = PROJECT_ROOT  # the checkout it ran in: bisect.md gives its lines from the root (report/pasted.py)

    def to_json(self) -> dict:
        return asdict(self)


def template_of(case: Case) -> Release:
    """The release a bisection runs at every version: the case's first buggy one (its design, schedule and
    expectation); a case without one has nothing to look for."""
    buggy = next((r for r in case.releases if r.expect), None)
    if buggy is None:
        raise KilltestError(f"{case.name} has no buggy release to bisect (a control is clean everywhere)")
    name, _, version = split_pin(case.runtime, buggy.packages[0])
    if version != buggy.version:
        raise KilltestError(f"{case.name}: the first pin of release {buggy.version} ({buggy.packages[0]}) is not"
                            " at that version, so which package to bisect is not known")
    return buggy


def verdict_of(outcome: ReleaseOutcome, expect: tuple[str, ...] | list[str] = ()) -> str:
    """`flagged` when the run shows the bug the case is about (every finding `expect` names), `clean` when it
    broke nothing, and `flagged for X, not Y` when it broke something else: crawlee-node-2085-locking's w14
    sometimes lands on a dataset item's write on 3.5.8-3.9.x (an empty file, `unreadable`), not on the request
    file whose emptying is the case's `lost`; calling that "flagged" hid where the loss begins (3.5.8 and
    3.11.5 both "flagged", nothing to halve). The search counts it on the no-bug side (`has_bug`). A run where
    no kill landed (the release never made the write the point names) is NOT_REACHED: it says nothing of a kill."""
    if (outcome.validity != "error" and outcome.kills == 0) or "makes no store write to" in outcome.error:
        return NOT_REACHED  # no kill landed, or the file a point names is never written (faults/file_aims.py)
    if outcome.validity != "invalid":
        return {"valid": "clean"}.get(outcome.validity, outcome.validity)
    absent = [code for code in expect if code not in outcome.got]
    if not absent:
        return "flagged"
    if "timed_out" in outcome.outcome.split(",") and "liveness" not in expect:
        return TIMED_OUT  # what it had not stored it might still have stored: no evidence either way
    return f"flagged for {', '.join(outcome.got) or 'another finding'}, not {', '.join(absent)}"


def bisect_case(case: Case, out: str, first: str | None = None, last: str | None = None, pre: bool = False,
                every: bool = False, probes: int = 1, rebuild: bool = False,
                say: Callable[[str], None] = print, command: str = "") -> Bisection:
    """Run `case` on the registry's releases from `first` to `last` (default: the case's oldest and newest
    pinned releases) as `search` picks them; every run's folder is results/cases/<case>/bisect/<version>."""
    template = template_of(case)
    plan = bisect_plan(case)
    schedule = plan.get("schedule") or schedule_of(case.args)
    numbered = numbered_writes(schedule) if schedule else []
    if numbered:
        raise KilltestError(f"{case.name}: its schedule names a store write by its number ({', '.join(numbered)}),"
                            " which is another write on another release: declare the write a bisection kills at"
                            f" by its file in {os.path.relpath(case.folder, PROJECT_ROOT)}/bisect.toml ([point]"
                            " schedule = \"w<k>:<file>\", why = \"...\")")
    case = dataclasses.replace(case, args=with_schedule(case.args, schedule)) if schedule else case
    package = split_pin(case.runtime, template.packages[0])[0]
    listed = releases(case.runtime, package, pre)
    pinned = sorted({r.version for r in case.releases if r.version in listed}, key=listed.index)
    first = first or (pinned[0] if pinned else template.version)
    last = last or (pinned[-1] if pinned else template.version)
    versions = between(listed, first, last, package)
    result = Bisection(case.name, package, first, last, versions, every=every, command=command,
                       measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       killtest_commit=killtest_commit(), point=schedule, point_why=plan.get("why", ""),
                       missing=missing_between(case.runtime, plan.get("missing", []), listed, first, last))
    say(f"bisect {case.name}: {len(versions)} releases of {package} from {first} to {last} on the registry"
        f" ({', '.join(versions)}); the expectation of {template.key}, killed at {schedule or 'no point'}"
        + (f"; not in the registry: {', '.join(m['version'] for m in result.missing)}" if result.missing else ""))
    started = time.monotonic()

    def verdict(version: str) -> str:
        pins = moved_pins(case.runtime, template.packages, template.version, version, pre)
        began = time.monotonic()
        release = Release(version, pins, template.expect, template.design, role=template.role)
        folder = f"{out}/cases/{case.name}/bisect/{version}"
        try:
            env = ensure_env(case.runtime, pins, rebuild=rebuild, say=say)
        except KilltestError as error:  # a release that does not install is a verdict of its own, not the end
            env, outcome = None, ReleaseOutcome(case.name, version, "", "", list(pins), list(template.expect),
                                                validity="error", error=str(error))
        built = round(time.monotonic() - began, 1)
        if env is not None:
            outcome = run_release(case, release, env, out, say, folder=folder)
        found = verdict_of(outcome, template.expect)
        result.runs.append({"version": version, "verdict": found, "got": outcome.got, "rows": outcome.rows,
                            "missing": outcome.missing, "duplicated": outcome.duplicated, "kills": outcome.kills,
                            "seconds": outcome.seconds, "env_seconds": built, "packages": list(pins),
                            "installed": outcome.installed, "error": outcome.error, "replay": outcome.replay,
                            "command": outcome.command, "out": folder, "crashed_in": crashed_in(folder),
                            "rows_at_kill": rows_at_kill(folder)})
        say(f"bisect {case.name}: {version} {found}{': ' + ', '.join(outcome.got) if outcome.got else ''}"
            f" ({outcome.seconds:g}s run, {built:g}s env; {len(result.runs)} run, {time.monotonic() - started:.0f}s"
            " so far)")
        return found

    found = search(versions, verdict, every=every, probes=probes, warn=say)
    result.every, result.warning = found.every, found.warning
    result.changes = [{"last": versions[a], "last_verdict": found.verdicts[a], "first": versions[b],
                       "first_verdict": found.verdicts[b], "neighbours": b == a + 1,
                       "missing": [m["version"] for m in result.missing if m["after"] in versions[a:b]]}
                      for a, b in found.changes()]
    result.seconds = round(time.monotonic() - started, 1)
    return result


def rows_at_kill(folder: str) -> int | None:
    """The rows the store held when the run's first kill landed (its `kill` event's store_rows), None without one:
    the same file's k-th write on two releases may come before its record is stored on one, after on the other
    (crawlee-node-2085-locking's 2nd write of a request's file: its lock from 3.10, its `handled` mark before)."""
    kill = first_in_folder(folder, "kill")
    return None if kill is None else kill.get("store_rows")


def crashed_in(folder: str, frames: int = 2) -> str:
    """Where a start that exited by itself with an error failed: its error line and the innermost frames of
    its stack (`RequestQueueClient.listHead < RequestQueue._ensureHeadIsNonEmpty`), from the run's history;
    "" when no start crashed. It tells a crash at a queue's open from one at run time."""
    for event in events_in_folder(folder):
        tail = event.get("stderr_tail") if event.get("type") == "crash" else None  # not a killed start's
        if tail:
            stack = [t.strip().removeprefix("at ").removeprefix("async ").split(" (")[0] for t in tail
                     if t.strip().startswith("at ") and "JSON.parse" not in t]
            return f"{tail[0].strip()} in {' < '.join(stack[:frames])}" if stack else tail[0].strip()
    return ""


def summary_lines(result: Bisection) -> list[str]:
    """What the command prints at the end: each change, each release that gave no verdict and why (the search
    went around it, so a change next to it lies between the releases that did), how many releases ran, the time."""
    judged = [r for r in result.runs if r["verdict"] not in NO_VERDICT]
    verdicts = {r["verdict"] for r in judged}
    # With no change every judged release is on one side; name the verdict when they agree, else the side.
    side = (verdicts.pop() if len(verdicts) == 1 else "flagged" if has_bug(judged[0]["verdict"])
            else "not flagged for the case's bug") if judged else "no verdict"
    lines = [f"bisect {result.case}: the verdict changes between {c['last']} and {c['first']}"
             + missing_words([m for m in result.missing if m["version"] in c.get("missing", ())], link=False)
             + f": {c['last']} is the last {c['last_verdict']}, {c['first']} the first {c['first_verdict']}"
             for c in result.changes] or [
        f"bisect {result.case}: {side} at every release run from {result.first} to {result.last}"
        + (" that gave one" if judged and len(judged) < len(result.runs) else "")]
    for run in result.runs:
        if run["verdict"] in NO_VERDICT:
            why = run["error"] or f"its run was {run['verdict']} (log: {run['out']}/killtest.log)"
            lines.append(f"bisect {result.case}: {run['version']} gave no verdict and was gone around: {why}")
    lines.append(f"bisect {result.case}: ran {len(result.runs)} of {len(result.versions)} releases in"
                 f" {result.seconds:.0f}s" + (" (every release)" if result.every else ""))
    return lines

