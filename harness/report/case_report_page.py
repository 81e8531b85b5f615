"""An upstream-ready report of one flagged case release (results/cases/<case>/<release>/report.md).

Written from the facts campaigns/case_report.py gathered from its runs: what was installed, the crawler,
the commands that reproduce it from a fresh directory (only the framework, killtest and the crawler),
what was expected and what happened, the framework's own log lines, and where the kill landed (the file
and write, and the stack read there or, for an asynchronous Node.js write, the stack that queued it).
Nothing in it is typed by hand but the headings: a figure comes from the run named at the top.
"""

from __future__ import annotations

import json
import os
import re
import shlex

from killtest.harness.design.case_spec import CASES_FOLDER
from killtest.harness.design.registry import design_named
from killtest.harness.errors import KilltestError
from killtest.harness.files import write_atomically
from killtest.harness.report import case_report_notes as notes
from killtest.harness.report import case_report_repro as repro
from killtest.harness.report.pasted import from_root

_FILE_FRAME = re.compile(r"[\w.-]+\.[cm]?[jt]s:\d+:\d+\)?$")  # a frame in a file: not `new Promise (<anonymous>)`
# The report's own run is shown between these words: its figures are not the run set of record's
# (tests/test_case_numbers.py reads every figure outside them against results/cases.json).
REPORT_RUN = "What this report's own run broke, from which the log lines and stacks below come"
REPORT_RUN_END = "(End of the report's own run's figures.)"


def _fence(lines: list[str], lang: str = "") -> list[str]:
    return [f"```{lang}", *lines, "```"]


def _reproduction(facts: dict) -> list[str]:
    """From a fresh directory: killtest in a venv of its own, the framework as the case pins it, the replay."""
    outcome = facts["outcome"]
    node = facts["runtime"] == "node"
    words = shlex.split(outcome.get("replay") or outcome["command"])
    words = words[next(i for i, w in enumerate(words) if w.endswith("killtest")) + 1:]  # past the env assignments
    if words and words[0] == "run":  # no replay line (a run that was not flagged): the run itself
        words = [w for w in words if w != "--no-plot"]
        cut = words.index("--out")
        words = words[:cut] + words[cut + 2:]
    design = words.index("--design") + 1
    words[design] = f'"$CASES/{facts["design"]}"'
    install = ([f"npm install --no-audit --no-fund --no-save --prefix framework {' '.join(facts['packages'])}"]
               if node else ["python3 -m venv framework",
                             f"framework/bin/pip install {' '.join(shlex.quote(p) for p in facts['packages'])}"])
    path = ('NODE_PATH="$PWD/framework/node_modules" PATH="$PWD/framework/node_modules/.bin:$PATH"' if node
            else 'PATH="$PWD/framework/bin:$PATH"')
    commit = outcome.get("killtest_commit") or "(not a checkout)"
    return _fence([
        f"# killtest at commit {commit}: a checkout (git clone ... && git checkout {commit.removesuffix('-dirty')})",
        "KILLTEST_SRC=/path/to/killtest-checkout",
        "mkdir repro && cd repro",
        "python3 -m venv killtest-venv && killtest-venv/bin/pip install \"$KILLTEST_SRC\"",
        *install,
        "# the crawler and its design ship with killtest (scrapers/cases/)",
        "CASES=$(killtest-venv/bin/python -c 'import killtest.scrapers as s, os;"
        " print(os.path.join(os.path.dirname(s.__file__), \"cases\"))')",
        f"{path} killtest-venv/bin/killtest {' '.join(words)} --out results",
    ], "sh")


def _where(facts: dict) -> list[str]:
    located = facts.get("located")
    if facts.get("point") is None:
        schedule = facts["args"][facts["args"].index("--schedule") + 1] if "--schedule" in facts["args"] else "-"
        return [f"The case's schedule (`{schedule}`) kills at requests the site receives, not at a store write, so no"
                " write was in progress to locate: the kill lands between the framework's steps."]
    lines = [f"The kill point is `{facts['point']}` (killtest's count of the start's store writes; the write is held"
             " at its system call's entry, then the start is SIGKILLed)."]
    if located:
        # The command as a user types it: `killtest`, not the path of the venv the report's run used.
        command = re.sub(r"^\S*/killtest\b", "killtest", from_root(located["command"]))
        lines.append(f"`{command}` says where it landed: {located['where'] or '(no words)'}.")
    note = facts.get("write_stacks")
    if note:
        lines += ["", "The JavaScript stack that queued that write (its `fs.writeFile` call, noted by"
                  " scrapers/cases/write-stacks.cjs as the call was made; the framework's frames first, the"
                  " crawler's own nearest frame below them):", "",
                  *_fence([f"write of {os.path.basename(note['path'])}",
                           *(_short_paths(frame) for frame in note["stack"][:14])])]
        own = next((frame for frame in note["stack"] if _FILE_FRAME.search(frame) and "/node_modules/" not in frame
                    and "node:" not in frame), None)
        framework = next((frame for frame in note["stack"] if "/node_modules/" in frame), None)
        lines += ["", f"- The framework's write: `{_short_paths(framework)}`" if framework else "",
                  f"- The crawler's nearest frame: `{_short_paths(own)}`" if own else
                  "- The crawler's nearest frame: none on this stack (the framework queued the write on its own)."]
    return lines


def _title(facts: dict, run: dict, record: dict | None = None) -> str:
    """`crawlee 3.2.2: after a SIGKILL during markRequestHandled's write of a request file, ...`: the framework,
    where the kill landed and what broke, in the run set of record's figures when there is one."""
    first = _broke(record) if record else (run.get("problems") or ["no problem recorded"])[0].split(" (broke ")[0]
    mechanism = repro.report_words(facts["case"]).get("mechanism") if facts.get("case") else None
    if mechanism:
        return f"{facts['framework']} {facts['version']}: {mechanism}: {first}"
    note = facts.get("write_stacks")
    if note:
        # The caller that asked for the write: the first frame in another package than the write's own
        # (markRequestHandled in @crawlee/core above lockAndWrite in @crawlee/memory-storage).
        packages = [_package(frame) for frame in note["stack"]]
        caller = next((_function(f) for f, p in zip(note["stack"], packages) if p and p != packages[0]), None)
        where = f"during {caller + chr(39) + 's' if caller else 'a'} write of {'/'.join(note['path'].split('/')[-3:])}"
    elif facts.get("point"):
        where = f"at store write {facts['point']}"
    else:
        schedule = facts["args"][facts["args"].index("--schedule") + 1] if "--schedule" in facts["args"] else ""
        where = f"at request {schedule.replace('r', '').replace(',', ' and ')}" if schedule else ""
    return f"{facts['framework']} {facts['version']}: after a SIGKILL {where}, {first}"


def _broke(record: dict) -> str:
    """What broke in a cases.json release, in its own figures: `lost 118 of 200 records`, `the next start
    crashed`, `the crawl never finished`, `11 rows for 10 records`."""
    got = record.get("got", [])
    said = (["the next start crashed"] if "crashed" in got else []) + (
        [f"lost {record['missing']} of {record['products']} records"] if record.get("missing") else []) + (
        ["the crawl never finished"] if "liveness" in got else []) + (
        [f"{record['rows']} rows for {record['products']} records"] if "extra_rows" in got else [])
    return ", ".join(said) or "no finding"


def _package(frame: str) -> str | None:
    """`@crawlee/core` of a frame in node_modules/@crawlee/core/..., `ow` of node_modules/ow/..."""
    at = frame.rfind("/node_modules/")
    if at < 0:
        return None
    parts = frame[at + len("/node_modules/"):].split("/")
    return "/".join(parts[:2]) if parts[0].startswith("@") else parts[0]


def _function(frame: str) -> str:
    words = frame.removeprefix("at ").removeprefix("async ").split(" (")[0]
    return words.split(".")[-1]


def report_markdown(facts: dict, record: dict | None = None) -> str:
    """report.md from its runs' facts and, when given, the release's row of results/cases.json (`record`): the
    title and the actual figures are the run set of record's; the log lines and stacks, this report's run's."""
    outcome, run = facts["outcome"], (facts.get("report_run") or {}).get("runs", [{}])[0]
    role = (record or {}).get("role") or facts["role"]
    lines = [f"# {_title(facts, run, record)}", "", f"Case: {facts['title']}.", "", *_written(facts, role), "",
             "## Prerequisites and waits", "", *notes.prerequisites(facts, record), "",
             "## Settings that are not the framework's defaults", "", *notes.settings(facts), "",
             "## Related upstream threads", "", *notes.threads(facts), "",
             "## Environment", "",
             f"- {facts['interpreter']} on {facts['system']}.",
             f"- Pinned: {', '.join(f'`{p}`' for p in facts['packages'])}; the pins' own dependencies as resolved:"
             f" {', '.join(outcome.get('dependencies', [])) or 'none'}.",
             f"- Every package installed ({len(outcome.get('installed', []))}, the env's installed.json):"
             f" {', '.join(outcome.get('installed', []))}.", "",
             "## The crawler", "",
             f"`scrapers/cases/{facts['design']}` runs `{_crawler_command(facts)}` (every file in"
             f" scrapers/cases/{facts['folder']}/ and the design it extends): a crawler written the way the"
             " framework's documentation writes one, on its default local storage, started by killtest with the"
             " address of a local test shop, killed with SIGKILL at the point below, then started again until it"
             " finishes.", "",
             "## Reproduce with the framework alone (no killtest)", "", *repro.framework_only(facts), "",
             "## Reproduce with killtest, from a fresh directory", "", *_reproduction(facts), "",
             "## Expected and actual", "", f"{notes.expected(facts, role)}.", "",
             notes.record_line(record), "",
             f"{REPORT_RUN} ({outcome['measured_at']}; its own figures, which may differ from the run set of"
             f" record's: {outcome['rows']} rows, {outcome['missing']} of {outcome['products']} lost):", "",
             *[f"- {problem}" for problem in run.get("problems", [])], "", f"{REPORT_RUN_END}", "",
             "## Exit statuses, and what the framework logged", "", notes.exit_line(facts), "",
             *repro.evidence(facts), ""]
    for crash in facts.get("crashes", []):
        lines += [f"Start {crash['start'] + 1} exited with status {crash['returncode']}; its last lines:", "",
                  *_fence([_short_paths(line) for line in crash["stderr_tail"]]), ""]
    for start in facts.get("logged") or []:
        blocks = [_short_paths(line) for block in start["blocks"] for line in block]
        lines += [f"Start {start['start']}'s own log lines that matter (warnings, errors, closing counters;"
                  " each once):", "",
                  *(_fence(blocks) if blocks else ["None."]), ""]
    if not facts.get("crashes") and not facts.get("logged"):
        lines += ["Nothing: no warning, no error, no non-zero exit.", ""]
    lines += ["## Where the kill landed", "", *_where(facts), "",
              "## Source lines, at the release's tag and as published", "", *notes.sources(facts), "",
              *notes.candidate_fix(facts)]
    # Paths from the checkout the runs were made in, whichever checkout writes the page (report/pasted.py).
    return from_root("\n".join(lines).replace("\n\n\n", "\n\n"), outcome.get("root")) + "\n"


def _written(facts: dict, role: str) -> list[str]:
    """Who wrote the report, from which runs, at which commit: a commit with uncommitted changes is said loudly."""
    outcome = facts["outcome"]
    commit = outcome.get("killtest_commit") or "-"
    clean = " (a clean commit)" if commit != "-" and not commit.endswith("-dirty") else ""
    lines = [f"*Written by `killtest cases --report {facts['case']} --release {facts['version']}` from its own runs,"
             f" {outcome['measured_at']} at killtest {commit}{clean},"
             " and rewritten from results/cases.json by `python -m killtest.harness.report.case_table --write`;"
             f" killtest's role for this release: {role}. Upstream: {', '.join(facts['upstream'])}.*"]
    if commit.endswith("-dirty"):
        lines += ["", f"**Not a run of record: killtest {commit} ran with uncommitted changes to its code, so no commit"
                  " reproduces exactly what ran. Run `killtest cases --report` again at a clean commit.**"]
    return lines


def _crawler_command(facts: dict) -> str:
    """The design's command as its spec writes it ({spec_dir}, {base_url} as killtest fills them in)."""
    try:
        return " ".join(design_named(os.path.join(CASES_FOLDER, facts["design"])).command_template)
    except KilltestError:
        return "(its design no longer loads)"


def _short_paths(line: str) -> str:
    """A log or stack line with the env's cache path cut to node_modules/... and the checkout's left out."""
    line = from_root(line)
    at = line.find("/node_modules/")
    if at < 0:
        return line
    start = max(line.rfind("(", 0, at), line.rfind(" ", 0, at))
    return line[:start + 1] + line[at + 1:]


def write_report(out: str, facts: dict) -> str:
    folder = os.path.join(out, "cases", facts["case"], facts["key"])
    os.makedirs(folder, exist_ok=True)
    write_atomically(os.path.join(folder, "report.json"), json.dumps(facts, indent=1) + "\n")
    path = os.path.join(folder, "report.md")
    write_atomically(path, report_markdown(facts, _record(out, facts["case"], facts["key"])))
    return path


def _record(out: str, case: str, key: str) -> dict | None:
    """The release's row of `out`/cases.json (the run set of record), if it has one."""
    try:
        with open(os.path.join(out, "cases.json"), encoding="utf-8") as src:
            rows = json.load(src).get("cases", {}).get(case, {}).get("releases", [])
    except (OSError, ValueError):
        return None
    return next((r for r in rows if os.path.basename(r.get("out", "")) == key), None)


def rewrite_reports(folder: str, data: dict) -> list[str]:
    """Every report.md under `folder` (results/cases) written again from its report.json and the release's row
    of `data` (cases.json): the paths changed."""
    changed = []
    for case in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        rows = data.get("cases", {}).get(case, {}).get("releases", [])
        for key in sorted(os.listdir(os.path.join(folder, case))):
            facts_path = os.path.join(folder, case, key, "report.json")
            if not os.path.exists(facts_path):
                continue
            with open(facts_path, encoding="utf-8") as src:
                facts = json.load(src)
            record = next((r for r in rows if os.path.basename(r.get("out", "")) == key), None)
            page = os.path.join(folder, case, key, "report.md")
            text = report_markdown(facts, record)
            with open(page, encoding="utf-8") as src:
                if src.read() == text:
                    continue
            write_atomically(page, text)
            changed.append(os.path.relpath(page))
    return changed
