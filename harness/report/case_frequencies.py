"""A case release's runs as frequencies: each run's figures read from its killtest.json, summed up per set.

`killtest cases` runs each release several times (campaigns/case_runs.py): the case's aimed schedule
repeated (`aimed`), and the same release on timed kills that killtest spreads over the crawl (`spread`).
One run is an anecdote; a maintainer asks how often. So each run is kept as a record of its own
(`run_record`: flagged or not, its findings, what it lost and duplicated, the kills that landed, how many
of its killed starts had stored records, its wall time) and each set is summed up (`aggregate`: flagged in
k of n runs, lost a-b with the median), and said in words (`frequency_words`) that the analyses page, each
case README's generated block and results/cases.md print alike.

Pure functions of killtest.json's content: nothing here runs anything (report/ may not import campaigns/).
"""

from __future__ import annotations

import statistics

from killtest.harness.check.kill_phases import STORED

SETS = ("aimed", "spread")
# How each set is named in words: the aimed points repeated; timed kills spread over the crawl.
SET_WORDS = {"aimed": "aimed runs", "spread": "spread-kill runs"}


def run_records(campaign: dict, kind: str, wall_s: float | None = None) -> list[dict]:
    """One record per run of a killtest.json (`campaign`): what the frequencies are counted from. `wall_s` is
    the whole `killtest run`'s time as the caller measured it (the run's own start-ups and checks included);
    without it, the run's own wall_s."""
    records = []
    for run in campaign.get("runs", []):
        starts = run.get("killed_starts") or []
        validity = run.get("validity", "valid" if run.get("valid") else "invalid")
        records.append({
            "kind": kind,
            "validity": validity,
            "flagged": validity == "invalid",
            "findings": list(run.get("findings", [])),
            "rows": run.get("rows", 0),
            "lost": run.get("missing_records", 0),
            "duplicated": run.get("duplicated_records", 0),
            "not_stored": run.get("not_stored_unfinished", 0),
            "kills_landed": run.get("kills", 0),
            "kills_planned": run.get("kills_planned", 0),
            "killed_starts": len(starts),
            "killed_storing": sum(start.get("phase") == STORED for start in starts),
            "outcome": run.get("outcome", ""),
            "landed_schedule": run.get("landed_schedule", ""),
            "wall_s": round(wall_s if wall_s is not None else run.get("wall_s", 0.0), 1),
        })
    return records


def shows_expected(record: dict, expect: list[str]) -> bool:
    """Whether one run shows what its release expects: flagged with every expected finding (others may come
    with them), or, for a release expecting none, valid (a run that proved nothing is not a pass)."""
    if expect:
        return record["flagged"] and set(expect) <= set(record["findings"])
    return record["validity"] == "valid"


def _spread(values: list[float]) -> dict:
    if not values:
        return {"min": 0, "max": 0, "median": 0}
    median = statistics.median(values)
    return {"min": min(values), "max": max(values), "median": int(median) if median == int(median) else median}


def aggregate(records: list[dict], expect: list[str]) -> dict:
    """One set's runs summed up: how many were flagged, how many showed what the release expects, how many
    proved nothing (unknown) or failed to run, the findings with the runs each came in, and the ranges of
    lost and duplicated records, of kills landed and of killed starts that had stored records."""
    ran = [r for r in records if r["validity"] != "error"]
    findings: dict[str, int] = {}
    for record in ran:
        for code in dict.fromkeys(record["findings"]):
            findings[code] = findings.get(code, 0) + 1
    return {
        "runs": len(records),
        "flagged": sum(r["flagged"] for r in ran),
        "as_expected": sum(shows_expected(r, expect) for r in ran),
        "unknown": sum(r["validity"] == "unknown" for r in ran),
        "errors": len(records) - len(ran),
        "findings": findings,
        "lost": _spread([r["lost"] for r in ran]),
        "duplicated": _spread([r["duplicated"] for r in ran]),
        "kills_landed": _spread([r["kills_landed"] for r in ran]),
        "kills_planned": _spread([r["kills_planned"] for r in ran]),
        "killed_starts": sum(r["killed_starts"] for r in ran),
        "killed_storing": sum(r["killed_storing"] for r in ran),
        "wall_s": _spread([r["wall_s"] for r in ran]),
    }


def _range(figures: dict, of: str = "") -> str:
    """`118-169 of 200 (median 137)`, or `0 of 200 in every run` when every run had the same."""
    if figures["min"] == figures["max"]:
        return f"{figures['min']:g}{of} in every run"
    return f"{figures['min']:g}-{figures['max']:g}{of} (median {figures['median']:g})"


def frequency_words(summary: dict, kind: str, products: int = 0) -> str:
    """`flagged in 5 of 5 aimed runs (lost, hole), records lost 118-169 of 200 (median 137)`: a set's verdict as
    a frequency, each finding with the runs it came in (when not every flagged run had it), the duplicates
    when any run had some, and the runs
    that proved nothing or failed to run."""
    words = f"flagged in {summary['flagged']} of {summary['runs']} {SET_WORDS[kind]}"
    if summary["findings"]:
        every = set(summary["findings"].values()) == {summary["flagged"]}
        words += " (" + ", ".join(code if every else f"{code} in {k}" for code, k in summary["findings"].items()) + ")"
    words += f", records lost {_range(summary['lost'], f' of {products}' if products else '')}"
    if summary["duplicated"]["max"]:
        words += f", duplicated {_range(summary['duplicated'])}"
    if summary["unknown"]:
        words += f"; {summary['unknown']} proved nothing"
    if summary["errors"]:
        words += f"; {summary['errors']} did not run"
    return words


def kill_words(summary: dict) -> str:
    """`kills landed 2-3 of 10 (median 2.5); 3 of 5 killed starts had stored records`: what the set's kills
    tested (a kill not landed came after the crawl was done, or before the start's work)."""
    planned = summary.get("kills_planned", {}).get("max")
    of = f" of {planned:g}" if planned and planned != summary["kills_landed"]["min"] else ""
    return (f"kills landed {_range(summary['kills_landed'], of)}; {summary['killed_storing']} of"
            f" {summary['killed_starts']} killed starts had stored records")


def release_frequencies(release: dict) -> str:
    """A release's whole line: its aimed runs, then its spread-kill runs or why it has none; empty for a
    result written before releases were run several times."""
    sets = release.get("frequencies") or {}
    if not sets.get("aimed"):
        return ""
    products = release.get("products", 0)
    said = frequency_words(sets["aimed"], "aimed", products)
    if sets.get("spread"):
        said += "; " + frequency_words(sets["spread"], "spread", products)
    if release.get("spread_note"):
        said += f" ({release['spread_note']})"
    return said


def set_cell(release: dict, kind: str) -> str:
    """One set's words for a table cell (`frequency_words`); for a set not run, the case's reason, or `-`."""
    summary = (release.get("frequencies") or {}).get(kind)
    note = release.get("spread_note", "") if kind == "spread" else ""
    if summary:
        return frequency_words(summary, kind, release.get("products", 0)) + (f" ({note})" if note else "")
    return note or "-"


def kills_cell(release: dict) -> str:
    """`aimed: kills landed 1 in every run; 5 of 5 killed starts had stored records. spread kills: ...`."""
    sets = release.get("frequencies") or {}
    return " ".join(f"{'aimed' if kind == 'aimed' else 'spread kills'}: {kill_words(sets[kind])}."
                    for kind in SETS if sets.get(kind))


def run_times(release: dict) -> str:
    """`60.8 s for 4 runs, a run 14.9-45.9 s (median 28.1)`: the release's wall time, and its runs'."""
    runs = [r["wall_s"] for r in release.get("runs", [])]
    if not runs:
        return f"{release['seconds']:g} s"
    each = _spread(runs)
    return (f"{release['seconds']:g} s for {len(runs)} runs, a run {each['min']:g}-{each['max']:g} s"
            f" (median {each['median']:g})")


def verdict_text(release: dict) -> str:
    """`flagged: lost, liveness`, `clean`, `unknown` or `error: ...`, as measured."""
    if release["validity"] == "error":
        return f"error: {release.get('error', '')}"
    if release["validity"] == "valid":
        return "clean"
    found = ", ".join(release.get("got", [])) or "no finding"
    return f"flagged: {found}" if release["validity"] == "invalid" else f"unknown: {found}"


def measured_text(release: dict) -> str:
    """The release's verdict as measured: its runs' frequencies (case_frequencies), or, for a result of one run
    (written before releases ran several times) or one that failed to run, `verdict_text`."""
    return (release["validity"] != "error" and release_frequencies(release)) or verdict_text(release)
