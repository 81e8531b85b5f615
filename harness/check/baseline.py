"""Compare a campaign with a saved one, design by design, and name every regression.

A baseline is the JSON a `killtest run` wrote (results/killtest.json, copied aside). Figures are
compared per design over all its runs, in forms that do not depend on how many runs there were:

| figure | a regression when this run's is | judged for |
| --- | --- | --- |
| lost records | higher | every design |
| wrong or unexpected records | higher | every design |
| runs that broke a promise | a larger share | every design |
| findings (killtest.harness.check.findings.Finding) | a code the baseline never reported | every design |
| rows per product, worst run | higher | designs that claim idempotence |
| repeated requests per landed kill | higher by more than `max_extra_repeats` | designs that claim idempotence |
| mean wall time per run | higher by more than `max_slowdown_pct` percent | every design |

A control such as the naive design stores and fetches whatever its start-up and request rate
allow inside the kill window, so its rows and repeated requests move with the machine's load:
they are shown, not judged.

Reading the saved file is I/O, so it lives in killtest.harness.report.baseline_file; this module only compares.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from killtest.harness import defaults


@dataclass(frozen=True)
class Thresholds:
    max_slowdown_pct: float = defaults.MAX_SLOWDOWN_PCT
    max_extra_repeats: float = defaults.MAX_EXTRA_REPEATS


@dataclass(frozen=True)
class FigureDiff:
    """One figure of one design, then and now."""

    design: str
    figure: str
    baseline: float | str | None
    now: float | str | None
    verdict: str  # ok | better | WORSE | shown (not judged) | new design

    def to_json(self) -> dict:
        return asdict(self)


def figures(runs: list[dict]) -> dict[str, float]:
    """One design's runs (as JSON dicts) reduced to the compared figures."""
    landed = sum(r["kills"] for r in runs)
    return {
        "lost records": sum(r["missing_records"] for r in runs),
        "wrong or unexpected records": sum(r["unexpected_records"] for r in runs),
        "share of runs that broke a promise": round(sum(not r["valid"] for r in runs) / len(runs), 3),
        "rows per product, worst run": max(r["duplicate_ratio"] for r in runs),
        "repeated requests per landed kill": round(sum(r["repeated_requests"] for r in runs) / max(1, landed), 3),
        "mean wall s per run": round(sum(r["wall_s"] for r in runs) / len(runs), 3),
    }


def _findings(runs: list[dict]) -> set[str]:
    return {code for r in runs for code in r.get("findings", [])}


def compare(baseline_runs: list[dict], current_runs: list[dict], claims_idempotence: dict[str, bool],
            thresholds: Thresholds = Thresholds()) -> list[FigureDiff]:
    """Every figure of every design of this run beside the baseline's, each with its verdict."""
    diffs = []
    for design in dict.fromkeys(r["design"] for r in current_runs):
        now_runs = [r for r in current_runs if r["design"] == design]
        then_runs = [r for r in baseline_runs if r["design"] == design]
        now = figures(now_runs)
        if not then_runs:
            diffs += [FigureDiff(design, name, None, value, "new design") for name, value in now.items()]
            continue
        then = figures(then_runs)
        judged = claims_idempotence.get(design, False)
        for name, value in now.items():
            diffs.append(FigureDiff(design, name, then[name], value, _verdict(name, then[name], value, judged,
                                                                               thresholds)))
        new_findings = sorted(_findings(now_runs) - _findings(then_runs))
        diffs.append(FigureDiff(design, "findings the baseline did not have", ", ".join(
            sorted(_findings(then_runs))) or "none", ", ".join(new_findings) or "none",
            "WORSE" if new_findings else "ok"))
    return diffs


def _verdict(name: str, then: float, now: float, judged: bool, thresholds: Thresholds) -> str:
    if name == "mean wall s per run":
        limit = then * (1 + thresholds.max_slowdown_pct / 100)
    elif name in ("rows per product, worst run", "repeated requests per landed kill"):
        if not judged:
            return "shown (control)"
        limit = then + (thresholds.max_extra_repeats if name.startswith("repeated") else 1e-9)
    else:
        limit = then
    if now > limit:
        return "WORSE"
    return "better" if now < then else "ok"


def regressions(diffs: list[FigureDiff]) -> list[str]:
    return [f"{d.design}: {d.figure} {_shown(d.now)}, baseline {_shown(d.baseline)}" for d in diffs
            if d.verdict == "WORSE"]


def _shown(value) -> str:
    return "–" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def diff_table(diffs: list[FigureDiff]) -> list[list[str]]:
    """Rows of design | figure | baseline | this run | verdict, for the report and the terminal."""
    return [[d.design, d.figure, _shown(d.baseline), _shown(d.now), d.verdict] for d in diffs]
