"""The parts of a case's report.md that are not its run's facts: what the reproduction needs and waits for, the
settings that are not the framework's defaults, the related upstream threads, what is expected, and the run
set of record's figures.

The prerequisites follow from the case's schedule (a store-write point needs strace; one named by file, the
seccomp gate on x86_64: harness/faults/points/store_write.py); the settings, waits and threads are written
by hand in the case folder's upstream.toml (report/case_words.py); "Expected" names only the promises the
case's design holds the framework to (its design.toml's does_not_promise waives the others); the figures are
the release's row of results/cases.json, the run set the analyses page and the README read.
"""

from __future__ import annotations

import os

from killtest.harness.design.case_spec import CASES_FOLDER
from killtest.harness.design.registry import design_named
from killtest.harness.errors import KilltestError
from killtest.harness.report.case_words import case_words, words_line

# The framework-only run's output is its own run: its figures are not the run set of record's either.
FRAMEWORK_ONLY = "<!-- framework-only run -->"
FRAMEWORK_ONLY_END = "<!-- end framework-only run -->"
# What each promise a case's design can hold means for a crawler of the shop, in a maintainer's words.
_MEANING = {"no_lost_records": "every product's record stored", "no_duplicates": "none of them stored twice",
            "correct_values": "every stored record readable and as the page showed it",
            "finishes": "the crawl finishing by itself after the last start, no start exiting with an error"}


def _schedule(facts: dict) -> str:
    args = facts["args"]
    return args[args.index("--schedule") + 1] if "--schedule" in args else ""


def prerequisites(facts: dict) -> list[str]:
    """`## Prerequisites and waits`: what the killtest reproduction needs on the machine, and how long it waits."""
    points = _schedule(facts).split(",")
    lines = ["- Linux, Python 3.11 or later for killtest, and the framework's runtime "
             f"({facts['interpreter']} here); the shop killtest serves runs on 127.0.0.1, nothing leaves the machine."]
    if any(p.startswith(("w", "xw")) and ":" not in p for p in points):
        lines.append("- `strace` on PATH (`apt-get install strace`): a store-write point (`w<n>`) holds the n-th"
                     " write at its system call's entry with strace's fault injection, then SIGKILLs the start."
                     " killtest first makes a recording run of the same crawl to count the writes, so the"
                     " reproduction runs the crawl once more than the schedule says.")
    if any(p.startswith(("w", "xw")) and ":" in p for p in points):
        lines.append("- x86_64: a write named by its file (`w<n>:FILE`) is held by a seccomp filter that names system"
                     " calls by their x86_64 numbers.")
    if not any(p.startswith(("w", "xw")) for p in points):
        lines.append("- Nothing else: the schedule's points are requests the shop receives (`r<n>`); no strace,"
                     " no seccomp.")
    waits = case_words(facts["case"])["report"].get("waits")
    if waits:
        lines.append(f"- Waits: {waits}")
    return lines


def settings(facts: dict) -> list[str]:
    """`## Settings that are not the framework's defaults`, and why, from the case's upstream.toml."""
    said = case_words(facts["case"])["report"].get("settings", [])
    return [f"- {line}" for line in said] or ["- None: the framework runs with its defaults."]


def threads(facts: dict) -> list[str]:
    """`## Related upstream threads`: the case's upstream.toml's, or its case.toml's links."""
    said = case_words(facts["case"])["report"].get("threads") or facts["upstream"]
    lines = [f"- {line}" for line in said]
    words = words_line(facts["case"], facts["version"], _label(facts))
    return lines + (["", words] if words else [])


def framework_only(facts: dict) -> list[str]:
    """`## Reproduce with the framework alone`: the case's script and its kept output, or that there is none."""
    said = case_words(facts["case"])["report"]
    script, output = said.get("framework_only"), said.get("framework_only_output")
    if not script:
        return ["None written yet for this case: the killtest reproduction below is the one there is."]
    folder = os.path.join(CASES_FOLDER, facts["case"])
    try:
        with open(os.path.join(folder, output or ""), encoding="utf-8") as src:
            kept = src.read().rstrip("\n").splitlines()
    except OSError:
        kept = ["(no output kept)"]
    return [f"`scrapers/cases/{facts['case']}/{script}` (and what it names beside it) needs only the framework,"
            " a POSIX shell and Python's standard library: no killtest, no strace, no seccomp. Run as"
            f" `sh {script}` with the framework where its runtime finds it (its venv's bin first on PATH for Python,"
            f" NODE_PATH at its node_modules for Node.js); its output, kept in"
            f" `scrapers/cases/{facts['case']}/{output}`:", "", FRAMEWORK_ONLY, "```", *kept, "```",
            FRAMEWORK_ONLY_END]


def exit_line(facts: dict) -> str:
    """How the report's run's starts ended: the silent loss is a last start that exits 0 (harness/running/runner.py
    calls a run `completed` only when its last start ended by itself with status 0, `crashed` when one failed)."""
    outcome, crashes = facts["outcome"], facts.get("crashes", [])
    failed = "; ".join(f"start {c['start'] + 1} exited by itself with status {c['returncode']}" for c in crashes)
    last = {"completed": "the last start ended by itself with exit status 0",
            "crashed": "the run ended with a start that exited with an error status",
            "timed_out": "the crawl had not finished when killtest's time limit stopped it"}.get(
        outcome["outcome"], f"outcome {outcome['outcome']}")
    return (f"Exit statuses in this report's run: {outcome['kills']} start(s) SIGKILLed by killtest (status 137 in a"
            f" shell); {failed or 'no start exited by itself with an error status'}; {last}.")


def candidate_fix(facts: dict) -> list[str]:
    """`## A candidate fix`: the case's patch (the source's) and the output of the check before and after it."""
    said = case_words(facts["case"])["report"]
    if not said.get("fix"):
        return []
    folder = os.path.join(CASES_FOLDER, facts["case"])
    read = {}
    for name in [said["fix"][0], said.get("fix_output", "")]:
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as src:
                read[name] = src.read().rstrip("\n").splitlines()
        except OSError:
            read[name] = ["(not found)"]
    kept = ", ".join(f"`scrapers/cases/{facts['case']}/{name}`" for name in said["fix"])
    return ["## A candidate fix", "", f"{said.get('fix_note', '')} Kept in the case folder: {kept}.", "",
            "```diff", *read[said["fix"][0]], "```", "", FRAMEWORK_ONLY, "```", *read[said.get("fix_output", "")],
            "```", FRAMEWORK_ONLY_END, ""]


def sources(facts: dict) -> list[str]:
    """`## Source lines`: the case's upstream.toml's, in the source a maintainer edits at the release's tag."""
    said = case_words(facts["case"])["report"].get("source", [])
    return [f"- {line}" for line in said] or ["- Not listed for this case yet."]


def expected(facts: dict) -> str:
    """`Expected`: only the promises the case's design holds the framework to, and what it waives."""
    try:
        design = design_named(os.path.join(CASES_FOLDER, facts["design"]))
    except KilltestError:
        return "(the case's design no longer loads)"
    held = [p.value for p in design.promises if p.value in _MEANING]
    waived = sorted(p.value for p in design.does_not_promise)
    return ("; ".join(f"{_MEANING[name]} ({name})" for name in held)
            + (f". Not expected, since the design waives it: {', '.join(waived)}"
               " (its design.toml says why)" if waived else ""))


def record_line(record: dict | None) -> str:
    """The release's figures in the run set of record (results/cases.json), or why there are none."""
    if not record:
        return "The release has no row in results/cases.json: the figures below are this report's run only."
    commit = record.get("killtest_commit") or "an unrecorded commit"
    return (f"Actual, in the run set of record (results/cases.json, measured {record.get('measured_at', '-')} at"
            f" killtest {commit}; the analyses page and the case README show the same run): {record['rows']} rows,"
            f" {record['missing']} of {record['products']} records lost, {record['duplicated']} duplicated,"
            f" {record['kills']} kills landed; findings: {', '.join(record.get('got', [])) or 'none'}; outcome:"
            f" {record['outcome']}; {record['seconds']:g} s.")


def _label(facts: dict) -> str:
    key, version = facts.get("key", ""), facts["version"]
    return "" if key == version else facts.get("outcome", {}).get("label", "")
