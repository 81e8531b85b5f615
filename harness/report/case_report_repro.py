"""A case's framework-only reproduction, as its report.md shows it, and the words the report keeps beside it.

A case folder's `repro/` holds a reproduction with the framework alone: `repro.sh` (a short script using only
the framework, a local shop and, where the kill must land inside one operation, a preload or monkeypatch that
SIGKILLs the process there; no killtest, no strace), what it names beside it, and `output.txt`, its runs'
output (three runs, with the date, the machine and the versions on top). The report shows the scripts whole and
the output as kept, and lifts out of the output what says a loss is silent: each start's exit status and the
framework's own closing counters.

`repro/report.toml` may hold the parts of the report's [report] words (report/case_words.py) that came with the
reproduction: the `mechanism` that titles the report, `settings`, `waits`, `threads`, `source`. A list there
follows upstream.toml's; a text both files give is a one-line error (one of them would be ignored).
"""

from __future__ import annotations

import os
import re

import tomllib

from killtest.harness.design.case_spec import CASES_FOLDER
from killtest.harness.errors import KilltestError
from killtest.harness.report.case_words import case_words

REPRO = "repro"
REPRO_SCRIPT, REPRO_OUTPUT, REPRO_WORDS = "repro.sh", "output.txt", "report.toml"
_REPRO_KEYS = ("mechanism", "settings", "waits", "threads", "source")
# The framework-only run's output is its own run: its figures are not the run set of record's either
# (tests/test_case_numbers.py leaves what stands between these out).
FRAMEWORK_ONLY = "<!-- framework-only run -->"
FRAMEWORK_ONLY_END = "<!-- end framework-only run -->"
# What a script's output says about how a start ended, and the framework's counters when it closed: an exit
# status, Crawlee's closing statistics, a request queue's own counts, Scrapy's stats, what the store holds.
_EVIDENCE = re.compile(r"exit status|Final request statistics|Finished! Total|request queue:|in_progress_requests"
                       r"|'(dupefilter/filtered|finish_reason|downloader/request_count|scheduler/enqueued)'"
                       r"|^(items|rows) \d+|requests\.seen holds|request files left empty|^# (.+, )?run \d+\b")
_LANGUAGE = {".sh": "sh", ".cjs": "js", ".js": "js", ".py": "python"}


def report_words(case: str, root: str | None = None) -> dict:
    """The case's [report] words: upstream.toml's and repro/report.toml's (see the module's docstring), and the
    framework-only reproduction found by its place (repro/repro.sh and repro/output.txt) when neither names one."""
    root = root or CASES_FOLDER
    said = dict(case_words(case, root)["report"])
    path = os.path.join(root, case, REPRO, REPRO_WORDS)
    try:
        with open(path, "rb") as src:
            more = tomllib.load(src)
    except FileNotFoundError:
        more = {}
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise KilltestError(f"{case}/{REPRO}/{REPRO_WORDS}: {err}") from None
    for key, value in more.items():
        if key not in _REPRO_KEYS:
            raise KilltestError(f"{case}/{REPRO}/{REPRO_WORDS}: unknown key {key};"
                                f" it may hold {', '.join(_REPRO_KEYS)}")
        if isinstance(value, list):
            said[key] = [*said.get(key, []), *value]
        elif key in said:
            raise KilltestError(f"{case}/{REPRO}/{REPRO_WORDS}: {key} is in {case}/upstream.toml too; keep one")
        else:
            said[key] = value
    if not said.get("framework_only") and os.path.exists(os.path.join(root, case, REPRO, REPRO_SCRIPT)):
        said["framework_only"] = f"{REPRO}/{REPRO_SCRIPT}"
        said["framework_only_output"] = f"{REPRO}/{REPRO_OUTPUT}"
    return said


def _read(path: str) -> list[str] | None:
    try:
        with open(path, encoding="utf-8") as src:
            return src.read().rstrip("\n").splitlines()
    except OSError:
        return None


def _scripts(folder: str, script: str) -> list[str]:
    """The script first, then every other file of its folder but its output and the report's words."""
    here = os.path.dirname(os.path.join(folder, script))
    names = sorted(n for n in os.listdir(here) if n not in (REPRO_OUTPUT, REPRO_WORDS) and os.path.splitext(n)[1]
                   in _LANGUAGE) if os.path.isdir(here) else []
    first = os.path.basename(script)
    return [first, *(n for n in names if n != first)]


def framework_only(facts: dict) -> list[str]:
    """`## Reproduce with the framework alone`: the scripts whole, how to run them, and the kept output."""
    said = report_words(facts["case"])
    script, output = said.get("framework_only"), said.get("framework_only_output")
    if not script:
        return ["None written yet for this case: the killtest reproduction below is the one there is."]
    folder = os.path.join(CASES_FOLDER, facts["case"])
    node = facts.get("runtime") == "node"
    lines = [f"`scrapers/cases/{facts['case']}/{script}` needs only the framework, a POSIX shell and Python's"
             " standard library (the shop, scrapers/cases/repro_shop.py, answers on 127.0.0.1): no killtest, no"
             " strace, no seccomp. Run it as `sh " + script + "` with the framework where its runtime finds it ("
             + ("NODE_PATH at the node_modules holding the pinned packages" if node else
                "the venv holding the pinned packages first on PATH, as `python`") + "). Its files:", ""]
    here = os.path.dirname(os.path.join(folder, script))
    for name in _scripts(folder, script):
        text = _read(os.path.join(here, name)) or ["(not found)"]
        lines += [f"`scrapers/cases/{facts['case']}/{os.path.relpath(os.path.join(here, name), folder)}`:", "",
                  f"```{_LANGUAGE.get(os.path.splitext(name)[1], '')}", *text, "```", ""]
    kept = _read(os.path.join(folder, output or "")) or ["(no output kept)"]
    lines += [f"Its output, as kept in `scrapers/cases/{facts['case']}/{output}`:", "", FRAMEWORK_ONLY, "```", *kept,
              "```", FRAMEWORK_ONLY_END]
    return lines


def evidence(facts: dict) -> list[str]:
    """The framework-only output's first run of this release (of the first release where it holds several),
    cut to its exit statuses and closing counters; empty without one."""
    said = report_words(facts["case"])
    kept = _read(os.path.join(CASES_FOLDER, facts["case"], said.get("framework_only_output") or "")) \
        if said.get("framework_only") else None
    if not kept:
        return []
    runs = [i for i, line in enumerate(kept) if re.match(r"# (.+, )?run \d+\b", line)]
    ours = [i for i in runs if re.search(rf"\b{re.escape(facts.get('version', ''))}\b", kept[i])]
    start = (ours or runs or [0])[0]  # the release's own first run where the output holds several releases'
    end = next((i for i in runs if i > start), len(kept))
    first = [line[:200] for line in kept[start:end] if _EVIDENCE.search(line)]
    shown = any(not line.startswith("# ") for line in first)
    if not shown:
        return []
    return ["In the framework-only reproduction (this release's first run; the others are above), each start's exit"
            " status and the framework's closing counters:", "",
            FRAMEWORK_ONLY, "```", *first, "```", FRAMEWORK_ONLY_END]
