"""The distinct failures of an exploration, a fuzz or a campaign, as every output shows them: the
terminal, Markdown, JSON and JUnit read the same groups (harness/check/distinct.py groups; this module
words them), and the triage page (triage_page.py) draws them.

An exploration reaches here as any object with `.outcomes` (campaigns/exploration.PointOutcome: point,
valid, landed, findings, problems, waived, where, place): report/ never imports running/.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence

from killtest.harness.check.distinct import (
    Broken,
    Failure,
    failure_line,
    folded,
    group_failures,
    header,
    point_ranges,
)
from killtest.harness.design.model import PROJECT_ROOT

# What each point's name means, in one place for the Markdown, the page and the docs.
LEGEND = ("`rK`: on the crawl's K-th request (a browser's icon or a page's image is not one), before the answer;"
          " `rK+`: at the first store write after it; `wN`: before the start's N-th write-type system call to its"
          " store (a write, fsync, rename, ...; a statement for a PostgreSQL or Redis store); `xwN`, `xrK`: the"
          " same, a power cut instead of a SIGKILL (what no fsync made durable is lost); `pS:D`: a pause of D"
          " seconds; `l:FILE:LINE:HIT`: before the HIT-th execution of that line")

AROUND = 2  # lines of the program shown either side of a failure's own line
TERMINAL_PARTS = 12  # ranges a terminal line shows of a failure's points; the Markdown, the page and the JSON list all
_BROKE = re.compile(r"\(broke (\w+)\)$")


def point_failures(outcomes: Iterable) -> list[Failure]:
    """The distinct failures among an exploration's broken points, in the order they were tried."""
    return group_failures([Broken(o.point, tuple(o.findings), tuple(o.problems), o.where, o.place, order=i,
                                  line=getattr(o, "line", ""), write=getattr(o, "write", ""),
                                  crash_line=failure_line(getattr(o, "timeline", {})))
                           for i, o in enumerate(outcomes) if not o.valid], shown=shown_line)


def shown_line(line: str) -> str:
    """`FILE:LINE` as a heading names it: relative to the directory killtest runs in when the file is below it
    (`scraper.py:37`), else as located."""
    path, _, number = line.rpartition(":")
    relative = os.path.relpath(_source_path(path))
    return f"{path if relative.startswith(os.pardir) else relative}:{number}"


def _source_path(path: str) -> str:
    """A line's file as a line point names it (killtest's own tree relative to its root) or as located."""
    return path if os.path.isabs(path) else os.path.join(PROJECT_ROOT, path)


def source_excerpt(line: str | Sequence[str], around: int = AROUND) -> list[tuple[int, str]]:
    """The text of `FILE:LINE` (or of each of a failure's lines in the first one's file) with `around` lines
    either side, read from the program's file: (number, text) pairs, in order, a gap where two lines are far
    apart; [] when the file or the line cannot be read (a program changed or removed since)."""
    lines = [line] if isinstance(line, str) else list(line)
    path = lines[0].rpartition(":")[0] if lines else ""
    at = marked_numbers(lines)
    if not at:
        return []
    try:
        with open(_source_path(path), encoding="utf-8", errors="replace") as source:
            text = source.read().splitlines()
    except OSError:
        return []
    if not all(1 <= n <= len(text) for n in at):
        return []
    shown = sorted({n for a in at for n in range(max(1, a - around), min(len(text), a + around) + 1)})
    return [(n, text[n - 1].rstrip()) for n in shown]


def marked_numbers(lines: str | Sequence[str]) -> list[int]:
    """The numbers of a failure's lines (`FILE:LINE` each) in the first one's file: the ones its text marks."""
    lines = [lines] if isinstance(lines, str) else list(lines)
    path = lines[0].rpartition(":")[0] if lines else ""
    return sorted({int(n) for p, _, n in (each.rpartition(":") for each in lines) if p == path and n.isdigit()})


def failure_source(failure: Failure) -> list[str]:
    """The lines a failure is at (`Failure.lines`, or its one line), for its text."""
    return list(failure.lines or ([failure.line] if failure.line else []))


def excerpt_lines(line: str | Sequence[str], indent: str = "    ") -> list[str]:
    """A failure's own line (or lines) in the terminal: each marked `>`, its neighbours numbered beside it, `...`
    where two lines are far apart."""
    excerpt = source_excerpt(line)
    width = len(str(excerpt[-1][0])) if excerpt else 0
    at = set(marked_numbers(line)) if excerpt else set()
    shown: list[str] = []
    for i, (n, text) in enumerate(excerpt):
        if i and n > excerpt[i - 1][0] + 1:
            shown.append(f"{indent}  {'.' * width} |")
        shown.append(f"{indent}{'>' if n in at else ' '} {n:>{width}} | {text}")
    return shown


def places_line(failure: Failure, most: int | None = TERMINAL_PARTS, parts: int | None = 3) -> str | None:
    """For a failure grouped by its line: the kinds of place its points landed at (at most `most`), each with
    its points (at most `parts` ranges), the detail a user cannot change (which write of SQLite's commit); None
    when it covers one kind."""
    places = failure.by_place()
    if not failure.line or len(places) < 2:
        return None
    most = len(places) if most is None else most
    shown = [f"{place} ({point_ranges((b.point for b in points), most=parts)})" for place, points in places[:most]]
    more = f"; and {len(places) - most} more" if len(places) > most else ""
    return "by kind: " + "; ".join(shown) + more


def locating_words(exploration) -> str | None:
    """What locating store writes in the program cost an exploration (campaigns/exploration.Exploration), or
    None when nothing was located: kinds read in their point's own run, points run once more, and the share of
    the exploration's time."""
    runs, read = getattr(exploration, "locate_runs", 0), getattr(exploration, "located_in_run", 0)
    if not runs and not read:
        return None
    # locate_s is summed over -j's processes: a share of their time, summed alike (with -j 1, the exploration's)
    jobs_s = max(getattr(exploration, "jobs_s", 0.0), exploration.elapsed_s)
    share = f"{100 * exploration.locate_s / jobs_s if jobs_s else 0.0:.1f}%"
    share += f" of its processes' {jobs_s:.1f} s" if jobs_s > exploration.elapsed_s * 1.05 else ""
    return (f"{read + runs} kind{'s' if read + runs != 1 else ''} of failure located in the program: {read} from"
            f" the stack read in the point's own run, {runs} point{'s' if runs != 1 else ''} run once more;"
            f" {exploration.locate_s:.1f} s of the exploration's {exploration.elapsed_s:.1f} s ({share})")


def fuzz_locating_words(result) -> str | None:
    """What reading the stacks of a fuzz's store-write kills cost (campaigns/fuzz_locate.py), its share of the
    fuzz's time; None when no stack was read."""
    read = [trial for trial in result.trials if getattr(trial, "located_s", 0.0)]
    if not read:
        return None
    spent = sum(trial.located_s for trial in read)
    share = 100 * spent / result.elapsed_s if result.elapsed_s else 0.0
    return (f"source locations: the store-write kills of {len(read)} schedule{'s' if len(read) != 1 else ''} located"
            f" in their own runs; {spent:.1f} s of the fuzz's {result.elapsed_s:.1f} s ({share:.1f}%)")


def exploration_header(outcomes: list, failures: list[Failure]) -> str:
    return header(len(outcomes), sum(1 for o in outcomes if not o.valid), len(failures))


def waived_line(outcomes: Iterable) -> str | None:
    """One line for what the points broke only of the promises the spec waives; None when nothing."""
    waived = [o for o in outcomes if getattr(o, "waived", None)]
    if not waived:
        return None
    promises = sorted({m[1] for o in waived for p in o.waived if (m := _BROKE.search(p))})
    named = ", ".join(promises) or "a waived promise"
    return (f"{len(waived)} point{'s' if len(waived) != 1 else ''} broke {named}, which the spec waives:"
            " not counted as broken (--strict counts them)")


def failure_lines(failures: list[Failure], replay: Callable[[Broken], str], noun: str = "point") -> list[str]:
    """The terminal's lines: each distinct failure once, its points as ranges, where, and its replay line."""
    lines = []
    for number, failure in enumerate(failures, 1):
        example = failure.example
        count = len(failure.points)
        lines.append(f"failure {number} of {len(failures)}, {failure.title}")
        shown = point_ranges((b.point for b in failure.points), most=TERMINAL_PARTS)
        lines.append(f"  {count} {noun}{'s' if count != 1 else ''}: {shown}")
        if by_kind := places_line(failure):
            lines.append(f"  {by_kind}")
        lines.append(f"  {example.point}: {example.where or failure.place}")
        if failure.line:
            lines += excerpt_lines(failure_source(failure))
        lines.append(f"  replay: {replay(example)}")
    return lines


def failures_json(failures: list[Failure], replay: Callable[[Broken], str]) -> list[dict]:
    """Each failure's JSON, with its replay line and, grouped by a line, that line's text and its neighbours."""
    return [{**failure.to_json(), "replay": replay(failure.example),
             "source": [list(pair) for pair in source_excerpt(failure_source(failure))] if failure.line else []}
            for failure in failures]


def failure_details(failure: Failure) -> list[str]:
    """What a JUnit case or a pytest report adds under a failure: the kinds inside it and its line's text."""
    return [*([by_kind] if (by_kind := places_line(failure)) else []),
            *(excerpt_lines(failure_source(failure), "") if failure.line else [])]


def failures_markdown(failures: list[Failure], replay: Callable[[Broken], str]) -> list[str]:
    """A section per distinct failure, for a Markdown report."""
    lines = ["## Distinct failures", ""] if failures else []
    for number, failure in enumerate(failures, 1):
        example = failure.example
        lines += [f"### {number}. {failure.title}", "",
                  f"- promises broken: {', '.join(failure.promises)}; where: {failure.place or 'the kill point'}",
                  f"- {len(failure.points)} point(s): {point_ranges(b.point for b in failure.points)}",
                  *([f"- {by_kind}"] if (by_kind := places_line(failure, most=None, parts=None)) else []),
                  f"- smallest and earliest: `{example.point}`" + (f", {example.where}" if example.where else ""),
                  *(["", "```", *excerpt, "```", ""]
                    if failure.line and (excerpt := excerpt_lines(failure_source(failure), "")) else []),
                  f"- replay: `{replay(example)}`", ""]
    return lines


def trial_failures(trials: Iterable) -> list[Failure]:
    """The distinct failures among a fuzz's failing schedules (campaigns/fuzzing.Trial), grouped as explore's
    points are: by promises, findings and the program's line every kill landed at (a located store write, a line
    point: campaigns/fuzz_locate.py), else the kinds of place the kills landed at, in the user's terms (`r3,w9`
    and `w12,r4` at the same kinds of place are one); the smallest case first. A schedule none of whose points
    could be described (timed kills only) is placed by its folded text (`tN,rN`)."""
    broken = []
    for i, trial in enumerate(trials):
        if trial.problems:
            case = trial.case
            products = 10_000 if case.recorded else case.pages * case.per_page
            points = case.schedule.split(",")
            catalog = "the recorded site" if case.recorded else f"{case.pages}x{case.per_page} products"
            words = trial.triage.get("where", "")
            broken.append(Broken(case.schedule, tuple(trial.triage.get("findings", ())), tuple(trial.problems),
                                 where=f"{words} (on {catalog})" if words else f"on {catalog}",
                                 place=trial.triage.get("place") or ",".join(folded(p) for p in points),
                                 size=len(points) * 100_000 + products, order=i, line=trial.triage.get("line", ""),
                                 crash_line=failure_line(trial.triage.get("timeline", {})),
                                 write=trial.triage.get("write", "")))
    return group_failures(broken, shown=shown_line)


def run_failures(verdicts: Iterable) -> list[Failure]:
    """The distinct failures among a campaign's failed runs (check/verdict.RunVerdict): the same design, promises
    and findings. A run proved nothing is no failure."""
    return group_failures([Broken(f"run{v.run}", tuple(v.findings), tuple(v.problems),
                                  where=f"seed {v.seed}" if v.seed is not None else "", place=v.design, order=i)
                           for i, v in enumerate(verdicts) if not v.valid and not v.proved_nothing])


def run_failure_bullets(failures: list[Failure], replay: Callable[[str, Broken], str | None]) -> list[str]:
    """A bullet per distinct failure of a campaign, for its report's first section."""
    bullets = []
    for failure in failures:
        example = failure.example
        line = replay(failure.place, example)
        bullets.append(f"**{failure.place}**: {'; '.join(example.problems)} — {len(failure.points)} run(s):"
                       f" {point_ranges(b.point for b in failure.points)}" + (f"; replay: `{line}`" if line else ""))
    return bullets


def by_promise_line(failures: list[Failure]) -> str | None:
    """One line over the failures by the promises they broke: how many bugs a reader may be looking at."""
    if not failures:
        return None
    counted: dict[str, list[int]] = {}
    for failure in failures:
        counts = counted.setdefault(", ".join(failure.promises), [0, 0])
        counts[0] += 1
        counts[1] += len(failure.points)
    return "by promise: " + "; ".join(f"{promise} ({n} failure{'s' if n != 1 else ''}, {points}"
                                      f" point{'s' if points != 1 else ''})"
                                      for promise, (n, points) in counted.items())
