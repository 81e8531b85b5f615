"""The crawler's own words and pace in a report: what a stopped or stalled start said last, how long it went
without a request, and the pace killtest measured before the killed runs (and how to pin it).

Plain lines from the verdict's `stalled_starts` (check/liveness.py) and the campaign's `measured_pace`
setting (harness/running/pace.py); the terminal, the Markdown and the JSON say the same thing.
"""

from __future__ import annotations

from killtest.harness import defaults
from killtest.harness.check.complaint import quoted
from killtest.harness.check.liveness import StartPace
from killtest.harness.check.verdict import RunVerdict
from killtest.harness.report.campaign import Campaign


def _summary(pace: dict) -> str:
    ended = {"kill": "killed", "time_limit": "stopped by the harness", "process_exited": "exited",
             "crash": "crashed", "run_finished": "still running at the end"}[pace["ended_by"]]
    if pace["startup_s"] is None:
        waited = f", waiting {pace['waiting_s']:g}s past the measured start-up" if pace["waiting_s"] else ""
        return f"start {pace['start']} ({ended} after {pace['alive_s']:g}s): no request at all{waited}"
    return (f"start {pace['start']} ({ended} after {pace['alive_s']:g}s): first request after {pace['startup_s']:g}s;"
            f" no request for its last {pace['quiet_at_end_s']:g}s; longest wait without a request after its first"
            f" {pace['waiting_s']:g}s")


def _words(pace: dict) -> list[str]:
    return StartPace(**pace).words() or ["(it wrote nothing to stderr or stdout)"]


def terminal_lines(v: RunVerdict) -> list[str]:
    """What the terminal shows under a run's line: the start the harness stopped, and every start that waited
    long without a request, each with its last words. Every start's are in the JSON and the Markdown."""
    paces = v.stalled_starts
    if not paces:
        return []
    stopped = [p for p in paces if p["ended_by"] == "time_limit"]
    shown = stopped + [p for p in paces if p not in stopped and p["waiting_s"] >= defaults.STALL_S]
    lines = []
    for pace in shown:
        lines.append(f"  {_summary(pace)}; its last words:")
        lines += [f"    {line}" for line in _words(pace)]
    if len(shown) < len(paces):
        lines.append("  (every start's pace and last words: the run's stalled_starts in the JSON and the Markdown)")
    return lines


def pace_bullets(campaign: Campaign) -> list[str]:
    """The Markdown's bullets: the measured pace, then every quoted start of every run."""
    bullets = [measured_line(campaign.settings.get("measured_pace"))] if campaign.settings.get("measured_pace") else []
    for v in campaign.verdicts:
        for pace in v.stalled_starts:
            said = "; ".join(quoted(line) for line in _words(pace))
            bullets.append(f"{v.design} run {v.run}, {_summary(pace)}. Last words: {said}")
    return bullets


def measured_line(measured: dict | None) -> str:
    """`measured from one unkilled start of crawlee-playwright: first request after 2.61s, crawl 6.2s; kill delays
    0.2-1s after each start's first request (waited for up to 7.83s after the spawn), time limit 120s
    (pin them: --kill-delay f0.2,1:7.83 --time-limit 120)`."""
    if not measured:
        return ""
    when = kills_after_words(measured["kill_delay_s"], measured.get("first_request_wait_s"), measured.get("spread"))
    return (f"measured from one unkilled start of {', '.join(measured['designs'])}: first request after"
            f" {measured['startup_s']:g}s, crawl {measured['crawl_s']:g}s; kill delays {when},"
            f" time limit {measured['time_limit_s']:g}s (pin them: {measured['pin']})")


def kills_after_words(kill_delay_s, wait: float | None, spread: bool | None = False) -> str:
    """`spread over 0.2-5.3s after each start's first request (waited for up to 7.8s after the spawn)`, or `3-5s
    after each start` (the user's --kill-delay, from the spawn): the terminal's line and the report's say it the
    same way."""
    low, high = kill_delay_s
    if wait is None:
        return f"{low:g}-{high:g}s after each start"
    over = "spread over " if spread else ""
    return f"{over}{low:g}-{high:g}s after each start's first request (waited for up to {wait:g}s after the spawn)"
