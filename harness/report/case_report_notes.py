"""The parts of a case's report.md that are not its run's facts: what the reproduction needs and waits for, the
settings that are not the framework's defaults, the related upstream threads, what is expected, and the run
set of record's figures.

The prerequisites follow from the case's schedule (a store-write point needs strace with its seccomp-bpf
filter; the locator reads a held thread's registers the x86_64 way; one named by file is a seccomp gate on
x86_64: harness/faults/points/store_write.py) and the waits from its run's seconds and its time limits; the
settings, waits and threads are written by hand in the case folder's upstream.toml (report/case_words.py) and
beside its framework-only reproduction (report/case_report_repro.py). "Expected" names only the promises the
framework keeps: those the case's design holds it to (its design.toml's does_not_promise waives the others),
and none where the release's role is a documented limitation (the framework's own words waive it); the figures
are the release's row of results/cases.json, the run set the analyses page and the README read.
"""

from __future__ import annotations

import os

from killtest.harness.design.case_spec import CASES_FOLDER
from killtest.harness.design.registry import design_named
from killtest.harness.errors import KilltestError
from killtest.harness.report.case_report_repro import FRAMEWORK_ONLY, FRAMEWORK_ONLY_END, report_words
from killtest.harness.report.case_words import words_for, words_line

__all__ = ["FRAMEWORK_ONLY", "FRAMEWORK_ONLY_END", "report_words"]
# What each promise a case's design can hold means for a crawler of the shop, in a maintainer's words.
_MEANING = {"no_lost_records": "every product's record stored", "no_duplicates": "none of them stored twice",
            "correct_values": "every stored record readable and as the page showed it",
            "finishes": "the crawl finishing by itself after the last start, no start exiting with an error"}


def _schedule(facts: dict) -> str:
    args = facts["args"]
    return args[args.index("--schedule") + 1] if "--schedule" in args else ""


def _option(facts: dict, name: str) -> str | None:
    args = facts["args"]
    return args[args.index(name) + 1] if name in args else None


def prerequisites(facts: dict, record: dict | None = None) -> list[str]:
    """`## Prerequisites and waits`: what the killtest reproduction needs on the machine, and how long it waits."""
    points = _schedule(facts).split(",")
    writes = [p for p in points if p.startswith(("w", "xw"))]
    lines = ["- Linux, Python 3.11 or later for killtest, and the framework's runtime "
             f"({facts['interpreter']} here); the shop killtest serves runs on 127.0.0.1, nothing leaves the machine."]
    if any(":" not in p for p in writes):
        lines += ["- `strace` on PATH (`apt-get install strace`; 5.3 or later, for `--seccomp-bpf`), and a kernel and"
                  " container that allow ptrace and seccomp filters (a container needs CAP_SYS_PTRACE, or a seccomp"
                  " profile that lets ptrace through): a store-write point (`w<n>`) holds the n-th write at its"
                  " system call's entry with strace's fault injection, then SIGKILLs the start. killtest first makes a"
                  " recording run of the same crawl to count the writes, so the reproduction runs the crawl once more"
                  " than the schedule says.",
                  "- x86_64 for the report's own locator (`killtest explore --only`), which reads the held thread's"
                  " registers from /proc/TID/syscall the x86_64 way; the replay line itself needs only strace."]
    if any(":" in p for p in writes):
        lines.append("- x86_64: a write named by its file (`w<n>:FILE`) is held by a seccomp filter that names system"
                     " calls by their x86_64 numbers.")
    if not writes:
        lines.append("- Nothing else: the schedule's points are requests the shop receives (`r<n>`); no strace,"
                     " no seccomp, any architecture.")
    took = f"{facts['outcome']['seconds']:.0f} s" if facts["outcome"].get("seconds") else "not recorded"
    of_record = f"; the run set of record's, {record['seconds']:.0f} s" if record and record.get("seconds") else ""
    limits = f"killtest stops a run at `--time-limit {_option(facts, '--time-limit') or 120}` s" + (
        f" and a start that makes no progress for `--no-progress-timeout {_option(facts, '--no-progress-timeout')}` s"
        if _option(facts, "--no-progress-timeout") else "")
    lines.append(f"- Time: this report's `killtest` run took {took} here{' with its recording run' if writes else ''}"
                 f"{of_record}; {limits} (a `timed_out` or `liveness` finding says which).")
    waits = report_words(facts["case"]).get("waits")
    if waits:
        lines.append(f"- Waits: {waits}")
    return lines


def settings(facts: dict) -> list[str]:
    """`## Settings that are not the framework's defaults`, and why, from the case's upstream.toml."""
    said = report_words(facts["case"]).get("settings", [])
    return [f"- {line}" for line in said] or ["- None: the framework runs with its defaults."]


def threads(facts: dict) -> list[str]:
    """`## Related upstream threads`: the case's upstream.toml's, or its case.toml's links."""
    said = report_words(facts["case"]).get("threads") or facts["upstream"]
    lines = [f"- {line}" for line in said]
    words = words_line(facts["case"], facts["version"], _label(facts))
    return lines + (["", words] if words else [])


def exit_line(facts: dict) -> str:
    """How each of the report's run's starts ended: the silent loss is a last start that exits 0
    (harness/running/runner.py calls a run `completed` only when its last start ended by itself with status 0,
    `crashed` when one failed). Reports of runs before the history said each start's end say it in sum."""
    outcome, crashes = facts["outcome"], facts.get("crashes", [])
    last = {"completed": "the last start ended by itself with exit status 0",
            "crashed": "the run ended with a start that exited with an error status",
            "timed_out": "the crawl had not finished when killtest's time limit stopped it"}.get(
        outcome["outcome"], f"outcome {outcome['outcome']}")
    if facts.get("exits"):
        ends = [f"start {e['start'] + 1} SIGKILLed by killtest at `{e['killed']}` (status 137 in a shell)"
                if "killed" in e else f"start {e['start'] + 1} still running, stopped by killtest {e['stopped']}"
                if "stopped" in e else f"start {e['start'] + 1} exited by itself with status {e['returncode']}"
                if e.get("returncode") is not None else f"start {e['start'] + 1}: no end recorded"
                for e in facts["exits"]]
        return f"Exit statuses in this report's run: {'; '.join(ends)}; {last}."
    failed = "; ".join(f"start {c['start'] + 1} exited by itself with status {c['returncode']}" for c in crashes)
    return (f"Exit statuses in this report's run: {outcome['kills']} start(s) SIGKILLed by killtest (status 137 in a"
            f" shell); {failed or 'no start exited by itself with an error status'}; {last}.")


def candidate_fix(facts: dict) -> list[str]:
    """`## A candidate fix`: the case's patch (the source's) and the output of the check before and after it."""
    said = report_words(facts["case"])
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
    said = report_words(facts["case"]).get("source", [])
    return [f"- {line}" for line in said] or ["- Not listed for this case yet."]


def expected(facts: dict, role: str) -> str:
    """`Expected`: only the promises the framework keeps: those the case's design holds it to, the others waived;
    none where the release's role is a documented limitation (its own words, quoted above, waive them)."""
    try:
        design = design_named(os.path.join(CASES_FOLDER, facts["design"]))
    except KilltestError:
        return "Expected: (the case's design no longer loads)."
    held = "; ".join(f"{_MEANING[p.value]} ({p.value})" for p in design.promises if p.value in _MEANING)
    waived = sorted(p.value for p in design.does_not_promise)
    if role == "documented limitation":
        source = next((w["source"] for w in words_for(facts["case"], facts["version"], _label(facts))),
                      "its documentation")
        return (f"Expected: nothing after a SIGKILL. {facts['framework']} {facts['version']}'s documentation"
                f" (<{source}>, quoted under the related threads) does not promise a resume after an unclean"
                " shutdown, so nothing"
                f" here is a broken promise of {facts['framework']}'s: what follows measures what the documented"
                f" limitation costs, against what killtest's design for the case checks ({held})")
    return (f"Expected, by what {facts['framework']} promises and the case's design holds it to: {held}"
            + (f". Not expected, since {facts['framework']} does not promise it and the design waives it:"
               f" {', '.join(waived)} (its design.toml says why)" if waived else ""))


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
