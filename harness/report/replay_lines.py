"""A failed run's replay lines as printed: the line its schedule gave, with the findings it is printed for
(`--expect`, which the replay checks), and, for timed kills, the line of the exact points where they landed.

A `killtest run` plans its replay lines before its runs; what a failed run found and where its timed kills landed
(check/landed_points.py) are known only after it. A timed line replays the same delays, which land elsewhere on
another run: it is printed, said to be timed, and followed by the exact line, whose kills land where the failed
run's did.
"""

from __future__ import annotations

import shlex

from killtest.harness.check.verdict import RunVerdict


def expecting(line: str, findings: list[str] | tuple[str, ...]) -> str:
    """`line` with `--expect CODES` (the failure's findings, no_kill_landed aside); unchanged without findings."""
    codes = [code for code in findings if code != "no_kill_landed"]
    return f"{line} --expect {','.join(codes)}" if codes else line


def with_schedule(line: str, schedule: str) -> str:
    """`line` with its `--schedule` value replaced by `schedule` (exact points), and without the site's pace and
    latency when it has no --lease (cli/explore.replay_line's rule: on exact points, only a lease makes them
    matter)."""
    words = shlex.split(line)
    at = words.index("--schedule") + 1
    words = [*words[:at], schedule, *words[at + 1:]]
    if "--lease" not in words:
        for flag in ("--pace", "--latency"):
            if flag in words:
                i = words.index(flag)
                words = words[:i] + words[i + 2:]
    return shlex.join(words)


def failed_run_replays(line: str | None, verdict: RunVerdict) -> list[tuple[str, str]]:
    """(what it is, the line) for a failed run: its own schedule's line and, when its kills were timed and their
    landing places are known, the exact line; each with --expect the run's findings. None for a run that passed."""
    if not line or verdict.valid:
        return []
    own = expecting(line, verdict.findings)
    if not verdict.landed_schedule:
        return [("replay", own)]
    return [("timed, not exact", own),
            ("exactly where its kills landed", expecting(with_schedule(line, verdict.landed_schedule),
                                                         verdict.findings))]


def replay_clauses(line: str | None, verdict: RunVerdict) -> str:
    """`; replay it (timed, not exact): `...`; replay it (exactly where its kills landed): `...``: a failed run's
    replay lines in a Markdown bullet; "" for a run that passed."""
    return "".join(f"; replay it{'' if what == 'replay' else f' ({what})'}: `{said}`"
                   for what, said in failed_run_replays(line, verdict))
