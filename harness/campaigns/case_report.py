"""`killtest cases --report CASE`: the facts of an upstream-ready report on each flagged release, from runs.

For each flagged release (or the one `--release` names) it makes two runs in the release's env and keeps
what they show, never a figure typed by hand:

1. the case's own `killtest run` (case_plan.run_release), into results/cases/<case>/<release>/report-run/,
   with the crawler's output kept (CRAWLER_LOG: a case's crawler appends what the framework logs) and, for a
   Node.js crawler, every asynchronous file write's JavaScript stack noted as it is queued
   (scrapers/cases/write-stacks.cjs, preloaded: libuv writes from a thread with no JavaScript frame, so the
   stack read at the held write cannot name the framework's line, and the stack of the call that queued it
   can);
2. when the case's schedule kills at a store write (w<n>), `killtest explore --only w<n>` on the same
   catalog: its words say which file and which write the kill landed on, and its locator reads the
   program's stack at that write (py-spy for Python, V8's map for Node.js: campaigns/locate.py).

report/case_report_page.py turns the facts into report.md. The facts are kept beside it (report.json).
"""

from __future__ import annotations

import itertools
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Callable

from killtest.harness.campaigns.case_envs import CaseEnv, ensure_env, interpreter_version
from killtest.harness.campaigns.case_explore import explore_words
from killtest.harness.campaigns.case_plan import killtest_commit, killtest_word, run_release
from killtest.harness.design.case_spec import CASES_FOLDER, Case, Release
from killtest.harness.design.registry import PROJECT_ROOT
from killtest.harness.errors import KilltestError
from killtest.harness.history import events_in_folder, first_in_folder

WRITE_STACKS = os.path.join(CASES_FOLDER, "write-stacks.cjs")
# The framework's own words worth a maintainer's eye: warnings, errors and a stack's first line, and its closing
# counters (Crawlee's "Final request statistics" and "Finished! Total ...": what a start that ended by itself did).
_LOGGED = re.compile(r"(WARN|ERROR|Error\b|Exception|Traceback|invalid|will be ignored|Resuming crawl"
                     r"|Final request statistics|Finished! Total)")
_TABLE = ("\u250c", "\u2502", "\u251c", "\u2514")  # the lines of a table Crawlee for Python logs its statistics in
# The counters of Scrapy's closing stats that say what a restart did with its job directory.
_STATS = re.compile(r"'(dupefilter/filtered|scheduler/(enqueued|dequeued)|item_scraped_count|finish_reason"
                    r"|downloader/request_count)'")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_WRITE_POINT = re.compile(r"^x?w\d+(:into:.+)?$")  # w14, or the write by its file: w2:into:FILE


def flagged_releases(case: Case, release: str | None) -> list[Release]:
    chosen = [r for r in case.releases if r.expect and (release is None or r.version == release)]
    if not chosen:
        raise KilltestError(f"{case.name} has no flagged release{' ' + release if release else ''} to report on")
    return chosen


def require_clean_commit(out: str) -> None:
    """A report written into the project's own results/ comes from a clean commit: one line and no run otherwise.
    Into any other folder it is written all the same, and says loudly that it is not a run of record."""
    commit = killtest_commit()
    results = os.path.realpath(os.path.join(PROJECT_ROOT, "results"))
    if commit and commit.endswith("-dirty") and os.path.realpath(out) == results:
        raise KilltestError(f"killtest {commit} has uncommitted changes to its code: a report in results/ must come"
                            " from a clean commit (commit first, or run from a clean worktree; --out elsewhere"
                            " writes one marked not of record)")


def write_point(case: Case) -> str | None:
    """The case's first store-write point (`w14`), if its schedule has one."""
    args = list(case.args)
    schedule = args[args.index("--schedule") + 1] if "--schedule" in args else ""
    return next((p for p in schedule.split(",") if _WRITE_POINT.match(p)), None)


def release_facts(case: Case, rel: Release, out: str, rebuild: bool = False,
                  say: Callable[[str], None] = print) -> dict:
    """Run the release for its report and gather what the report says (see the module's docstring)."""
    require_clean_commit(out)
    env = ensure_env(case.runtime, rel.packages, rebuild=rebuild, say=say, patch=rel.patch)
    folder = os.path.abspath(os.path.join(out, "cases", case.name, rel.key))
    run_dir = os.path.join(folder, "report-run")
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    crawler_log, stacks = os.path.join(run_dir, "crawler.log"), os.path.join(run_dir, "write-stacks.jsonl")
    extra = {"CRAWLER_LOG": crawler_log}
    if case.runtime == "node":
        extra.update(KILLTEST_WRITE_STACKS=stacks, NODE_OPTIONS=f"--require {WRITE_STACKS}")
    outcome = run_release(case, rel, env, out, say, folder=run_dir, extra_env=extra)
    facts: dict = {"case": case.name, "title": case.title, "framework": case.framework, "upstream": list(case.upstream),
                   "version": rel.version, "key": rel.key, "role": rel.role, "runtime": case.runtime,
                   "interpreter": _interpreter(case.runtime), "system": f"{platform.system()} {platform.release()}",
                   "packages": list(rel.packages), "outcome": outcome.to_json(), "args": list(case.args),
                   "design": os.path.relpath(rel.design, CASES_FOLDER), "folder": os.path.relpath(case.folder,
                                                                                                   CASES_FOLDER)}
    facts["report_run"] = _read_json(os.path.join(run_dir, "killtest.json"))
    facts["exits"] = _exits(run_dir)
    facts["crashes"] = _crashes(facts["exits"])
    facts["logged"] = _logged(crawler_log)
    point = write_point(case)
    facts["point"] = point
    facts["located"] = _explore(case, rel, env, point, run_dir, say) if point else None
    facts["write_stacks"] = _stacks_for(stacks, facts["located"], _killed_start(run_dir))
    return facts


def _interpreter(runtime: str) -> str:
    if runtime == "python":
        return f"Python {platform.python_version()}"
    try:
        return "Node.js " + subprocess.run(["node", "--version"], capture_output=True, text=True,
                                           timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return interpreter_version(runtime)


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as src:
            return json.load(src)
    except (OSError, ValueError):
        return {}


def _exits(run_dir: str) -> list[dict]:
    """How each start of the run ended, from its history: SIGKILLed at a point (`killed`), stopped by killtest's
    limits (`stopped`), or exited by itself with its status (`returncode`); with its stderr's last lines where the
    history kept them."""
    starts: dict[int, dict] = {}
    for event in events_in_folder(run_dir):
        if not isinstance(event.get("start"), int):
            continue
        entry = starts.setdefault(event["start"], {"start": event["start"]})
        if event.get("type") == "kill":
            entry["killed"] = event.get("point") or "a kill"
        elif event.get("type") == "time_limit":  # stopped by killtest: its time limit, or no progress
            entry["stopped"] = (f"after {event['no_progress_s']} s without progress" if event.get("no_progress_s")
                                else "at the run's time limit")
        elif event.get("returncode") is not None:
            entry["returncode"] = event["returncode"]
        if event.get("stderr_tail"):
            entry["stderr_tail"] = event["stderr_tail"]
    return [starts[n] for n in sorted(starts)]


def _crashes(exits: list[dict]) -> list[dict]:
    """Each start that exited by itself with an error status, with its last stderr lines."""
    return [{"start": e["start"], "returncode": e["returncode"], "stderr_tail": e.get("stderr_tail", [])}
            for e in exits if "killed" not in e and "stopped" not in e and e.get("returncode") not in (None, 0)]


def _logged(path: str, most: int = 60) -> list[dict]:
    """The framework's warnings and errors from the crawler's kept output, per start (killtest's recording
    left out), each with the indented lines under it (a stack), colours stripped, each distinct block once."""
    try:
        with open(path, encoding="utf-8", errors="replace") as src:
            text = _ANSI.sub("", src.read())
    except OSError:
        return []
    starts = re.split(r"^--- crawler started: .*$", text, flags=re.M)[1:]
    headers = re.findall(r"^--- crawler started: .*$", text, flags=re.M)
    found: list[dict] = []
    shown = 0
    for header, section in zip(headers, starts):
        if "killtest-record-" in header:
            continue  # the recording killtest makes to aim a write point: not a start of the run
        blocks, lines = [], section.splitlines()
        for i, line in enumerate(lines):
            if _STATS.search(line):  # a counter of the framework's closing stats (Scrapy's dump), indented
                blocks.append([line.strip().rstrip(",")])
            elif _LOGGED.search(line) and not line.startswith((" ", "\t")):
                block = [line.rstrip()]
                block += list(itertools.takewhile(lambda more: more.startswith((" ", "\t", *_TABLE)),
                                                  lines[i + 1:i + 16]))
                block = [b.rstrip() for b in block]
                blocks.append(block)
        unique = list(dict.fromkeys(tuple(b) for b in blocks))
        shown += sum(len(b) for b in unique)
        found.append({"start": len(found) + 1, "blocks": [list(b) for b in unique]})
        if shown > most:
            break
    return found


def _explore(case: Case, rel: Release, env: CaseEnv, point: str, run_dir: str, say: Callable[[str], None]) -> dict:
    """`killtest explore --only POINT` on the case's catalog: where the kill landed and the stack read there."""
    words = explore_words(case)
    explore_dir = os.path.join(run_dir, "explore")
    command = [sys.executable, "-m", "killtest", "explore", "--design", rel.design, "--only", point, *words,
               "--out", explore_dir]
    say(f"[{case.name} {rel.key}] killtest explore --only {point}: where the kill lands, and the stack there")
    with open(os.path.join(run_dir, "explore.log"), "w", encoding="utf-8") as log:
        subprocess.run(command, env=env.environ(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                       check=False)
    data = next((_read_json(os.path.join(explore_dir, n)) for n in sorted(os.listdir(explore_dir))
                 if n.endswith(".json")), {}) if os.path.isdir(explore_dir) else {}
    outcome: dict = next((o for o in data.get("outcomes", []) if o.get("point") == point), {})
    return {"where": outcome.get("where", ""), "place": outcome.get("place", ""), "valid": outcome.get("valid"),
            "problems": outcome.get("problems", []),
            "command": " ".join([killtest_word(), "explore", "--design", rel.design, "--only", point, *words])}


def _killed_start(run_dir: str) -> int:
    """The index of the start the (first) kill landed on, from the run's history."""
    kill = first_in_folder(run_dir, "kill")
    return 0 if kill is None else int(kill.get("start", 0))


def _stacks_for(path: str, located: dict | None, start: int) -> dict | None:
    """The last stack the killed start noted for the file the kill landed on (its name in explore's words).
    A start is one Node.js process here (one worker), so the n-th process to note a write is start n: the
    pid killtest records is the write gate's, not node's."""
    if located is None or not os.path.exists(path):
        return None
    named = re.search(r"write to (\S+?\.\w+)", located.get("where", ""))
    if named is None:
        return None
    target = os.path.basename(named.group(1))
    notes = []
    with open(path, encoding="utf-8") as src:
        for line in src:
            try:
                notes.append(json.loads(line))
            except ValueError:
                continue  # a line cut by the kill
    # killtest's recording (it aims the write point) writes first, in a folder of its own: not a start.
    notes = [note for note in notes if "/killtest-record-" not in note.get("path", "")]
    pids = list(dict.fromkeys(note.get("pid") for note in notes))
    if start >= len(pids):
        return None
    found = [note for note in notes if note.get("pid") == pids[start]
             and os.path.basename(note.get("path", "")) == target]
    nth = re.search(r"before the (\d+)(?:st|nd|rd|th) write to", located.get("where", ""))
    index = int(nth.group(1)) - 1 if nth else len(found) - 1  # explore says which write of the file it was
    return found[index] if 0 <= index < len(found) else None
