"""The fuzz failure database: every distinct failure `killtest fuzz` found, kept on disk and replayed first.

Hypothesis keeps the failing examples of a test in a directory (`.hypothesis/examples/`) and tries them
before it generates anything new; this is the same for kill schedules. The database is a directory
(`--database DIR`, default `<out>/fuzz-database`) laid out as

    DIR/<design name>-<fingerprint>/<catalog>/<hash of the schedule>.json

one small JSON file per failure (its schedule, catalog, the promises it broke, whether it was exact, the
design's fingerprint). The fingerprint is a hash of what the design is: its spec's text and its program
(a Python design's module source, and each file of the spec's folder its command names). Change the
scraper and its failures are kept under the old fingerprint, not replayed against a program they were
not found on: a new design, a fresh search.

Each file is written whole (a temporary file in the same folder, then os.replace), and a failure's file
name is its content's key, so several processes (pytest-xdist workers, `-j` searches) can save into one
database at once: two savers of the same failure write the same file, and a reader never sees half of one.

On the next fuzz of the same design `replay_saved` runs every saved failure once, exact ones first, and
says which still fail and which now pass; a passing exact failure is deleted (it is fixed, as Hypothesis
deletes an example that no longer fails), a passing timed one is kept (it may just not have repeated).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from killtest.harness.campaigns.fuzzing import Bench, Case, FuzzResult, Trial, bench
from killtest.harness.design.model import Design
from killtest.harness.running.runner import RunSettings

FORMAT = 1  # the version of a failure file; a file of another version is left alone, never read


def fingerprint(design: Design) -> str:
    """A hash of what the design is: its spec's text (or its record, for a design without a spec file) and
    its program's files: the module's source, and every file of the spec's folder its command names."""
    digest = hashlib.sha256()
    digest.update(f"design {design.name}\n".encode())
    digest.update(_read(design.spec_file) if design.spec_file else repr(design).encode())
    for path in _program_files(design):
        digest.update(f"\nfile {os.path.basename(path)}\n".encode())
        digest.update(_read(path))
    return digest.hexdigest()


def _program_files(design: Design) -> list[str]:
    files = []
    if design.module:
        found = importlib.util.find_spec(design.module)
        if found is not None and found.origin and os.path.isfile(found.origin):
            files.append(found.origin)
    for word in (*design.command_template, *design.args):
        for named in re.findall(r"\{spec_dir\}/([^\s{}]+)", word):
            path = os.path.join(design.spec_dir, named)
            if os.path.isfile(path):
                files.append(path)
    return files


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as content:
            return content.read()
    except OSError:
        return b""


@dataclass(frozen=True)
class Saved:
    """One saved failure: the case that failed, what it broke, and the file that holds it."""

    case: Case
    problems: tuple[str, ...]
    exact: bool
    path: str


@dataclass(frozen=True)
class Replayed:
    """A saved failure run again: `trial.problems` empty means it now passes."""

    saved: Saved
    trial: Trial

    @property
    def verdict(self) -> str:
        if self.trial.problems:
            return "still fails"
        return "now passes" if self.saved.exact else "passed this time (timed: kept)"

    def to_json(self) -> dict:
        return {"schedule": self.saved.case.schedule, "catalog": self.saved.case.catalog, "exact": self.saved.exact,
                "verdict": self.verdict, "problems": self.trial.problems}


class FailureDatabase:
    """The saved failures of one design (by its fingerprint) under a database directory."""

    def __init__(self, root: str, design: Design) -> None:
        self.root, self.design = os.path.abspath(root), design.name
        self.fingerprint = fingerprint(design)
        safe = re.sub(r"[^\w.-]+", "_", design.name)
        self.dir = os.path.join(self.root, f"{safe}-{self.fingerprint[:16]}")

    def saved(self) -> list[Saved]:
        """Every failure saved for this design, exact ones first, then by schedule; a file that is not one
        (a stray, another version) is skipped."""
        found = []
        for folder, _, names in os.walk(self.dir):
            for name in names:
                if name.endswith(".json"):
                    entry = self._load(os.path.join(folder, name))
                    if entry is not None:
                        found.append(entry)
        return sorted(found, key=lambda s: (not s.exact, len(s.case.schedule.split(",")), s.case.catalog,
                                            s.case.schedule))

    def _load(self, path: str) -> Saved | None:
        try:
            with open(path, encoding="utf-8") as source:
                data = json.load(source)
            if data.get("format") != FORMAT or data.get("fingerprint") != self.fingerprint:
                return None
            case = Case(int(data["pages"]), int(data["per_page"]), str(data["schedule"]))
            return Saved(case, tuple(data["problems"]), bool(data["exact"]), path)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def path_of(self, case: Case) -> str:
        key = hashlib.sha256(case.schedule.encode()).hexdigest()[:16]
        return os.path.join(self.dir, case.catalog, f"{key}.json")

    def save(self, trial: Trial) -> bool:
        """Keep a failing trial; False when it was already saved (or is no failure)."""
        if not trial.problems:
            return False
        path = self.path_of(trial.case)
        if os.path.exists(path):
            return False
        record = {"format": FORMAT, "design": self.design, "fingerprint": self.fingerprint,
                  **dataclasses.asdict(trial.case), "catalog": trial.case.catalog, "problems": trial.problems,
                  "exact": trial.exact}
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # A temporary file of this process's own in the same folder, then one rename: another process saving
        # the same failure at the same moment writes its own temporary file, never into this one.
        handle, temporary = tempfile.mkstemp(prefix=".saving-", suffix=".partial", dir=os.path.dirname(path))
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(json.dumps(record, indent=2) + "\n")
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.remove(temporary)
            raise
        return True

    def forget(self, saved: Saved) -> None:
        """Delete a saved failure (it now passes); another process may have deleted it first."""
        try:
            os.remove(saved.path)
        except FileNotFoundError:
            pass


def replay_saved(database: FailureDatabase, on: Bench,
                 on_replay: Callable[[Replayed], None] = lambda replayed: None) -> list[Replayed]:
    """Run every saved failure of the design once, on its own catalog; forget an exact one that now passes."""
    done = []
    for saved in database.saved():
        replayed = Replayed(saved, on.trial(saved.case))
        if not replayed.trial.problems and saved.exact:
            database.forget(saved)
        on_replay(replayed)
        done.append(replayed)
    return done


def describe(label: str, replayed: Replayed) -> str:
    """A progress line: `[fuzz X] saved failure w55 on 2x1: still fails: lost 1 of 2 records ...`."""
    case = replayed.saved.case
    said = f": {'; '.join(replayed.trial.problems)}" if replayed.trial.problems else ""
    return f"{label} saved failure {case.schedule} on {case.catalog}: {replayed.verdict}{said}"


def replay_first(database: FailureDatabase, design: Design, run_settings: RunSettings, *, prefork: bool,
                 work_dir: str | None, power_cut: bool, on_progress: Callable[[str], None]) -> list[Replayed]:
    """The saved failures of `design`, each run once on a bench of their own before any search (none: no bench)."""
    if not database.saved():
        return []
    label = f"[fuzz {design.name}]"
    with bench(design, run_settings, prefork=prefork, work_dir=work_dir, power_cut=power_cut) as on:
        return replay_saved(database, on, lambda replayed: on_progress(describe(label, replayed)))


def result_of_replays(design: Design, replayed: list[Replayed], elapsed_s: float) -> FuzzResult | None:
    """The fuzz's result when a saved failure still fails, as Hypothesis stops at a saved example that still
    fails: that failure (an exact one first; it was saved shrunk), no search. None: every one passed."""
    failing = [r.trial for r in replayed if r.trial.problems]
    if not failing:
        return None
    first = next((t for t in failing if t.exact), failing[0])
    return FuzzResult(design.name, trials=[r.trial for r in replayed], failure=first, shrunk=first,
                      elapsed_s=elapsed_s)


def save_failures(database: FailureDatabase, result: FuzzResult) -> int:
    """Save every failing trial of a search and its shrunk failure; how many were new."""
    trials = [*result.trials, *([result.shrunk] if result.shrunk is not None and result.shrunk.exact else [])]
    return sum(database.save(trial) for trial in trials)


def database_json(database: FailureDatabase, replayed: list[Replayed], new: int) -> dict:
    """What a fuzz's JSON result says of its database: where, each replayed failure's verdict, how many new."""
    return {"dir": database.dir, "fingerprint": database.fingerprint, "new_failures_saved": new,
            "replayed": [r.to_json() for r in replayed]}


def database_markdown(said: dict) -> str:
    """The report's paragraph on the database: the saved failures replayed first and their verdicts."""
    lines = ["", f"Failure database `{said['dir']}`: {len(said['replayed'])} saved failures replayed first,"
                 f" {said['new_failures_saved']} new saved.", ""]
    if said["replayed"]:
        lines += ["| catalog | saved schedule | now |", "| --- | --- | --- |"]
        lines += [f"| {r['catalog']} | `{r['schedule']}` | {r['verdict']} |" for r in said["replayed"]]
    return "\n".join(lines) + "\n"
