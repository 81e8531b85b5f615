"""Liveness: did the crawl finish, and when a start stalled, what it said and how long it went without a request.

A crawl stopped by the time limit or for making no progress did not finish, so what it had not stored
is "not stored because the crawl did not finish", never `lost`: it might have been stored a minute
later (Crawlee waits out a killed start's request locks for up to 360 s). `lost` is for a crawl that
finished (check/named_checks.py `records`).

A start's own words are what tells a stall from a hang: the runner keeps the last lines each start
wrote to stderr and stdout (`start_output`, masked on a recorded site) and this module quotes them
with the time the start spent without a request. Time alive without a request after the start's
first request is waiting, not start-up. When the restarts came after a delay (--restart-delay), the liveness
finding names the delays and quotes what the stopped start said while it waited. Pure: it reads only the history.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from killtest.harness import defaults
from killtest.harness.check.categories import EXAMPLES, required_event, startup_allowed_s
from killtest.harness.check.complaint import quoted
from killtest.harness.check.findings import Finding
from killtest.harness.check.verdict import CheckResult, RunVerdict, judged
from killtest.harness.history import History

# Events that end a start (a worker killed alone does not: its start goes on).
_ENDS = ("kill", "time_limit", "process_exited", "crash")


@dataclass
class StartPace:
    """One start's pace and last words: what the report quotes when a start stalled or the crawl did not finish."""

    start: int  # 1-based, as reports count
    alive_s: float
    startup_s: float | None  # spawn to its first request; None: it made none
    # The longest it went without a request after its first one, while alive; for a start that made none, its
    # time alive past the measured start-up (categories.startup_allowed_s), when one was measured.
    waiting_s: float
    quiet_at_end_s: float  # from its last request (or its spawn) to its end
    ended_by: str  # kill | time_limit | process_exited | crash | run_finished
    stderr_tail: list[str] = field(default_factory=list)
    stdout_tail: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    def words(self) -> list[str]:
        """The lines to quote: stderr's, then stdout's, each marked, the last `QUOTED_LINES` of each."""
        said = [f"stderr: {line}" for line in self.stderr_tail[-defaults.QUOTED_LINES:] if line.strip()]
        return said + [f"stdout: {line}" for line in self.stdout_tail[-defaults.QUOTED_LINES:] if line.strip()]


def start_paces(history: History) -> list[StartPace]:
    """Every start's pace, from its process_started, its requests, the event that ended it and its output."""
    finished = required_event(history, "run_finished")["t"]
    allowed = startup_allowed_s(history)
    ends: dict[int, tuple[float, str]] = {}
    for kind in _ENDS:
        for event in history.of_type(kind):
            if kind == "kill" and event.get("worker") is not None:
                continue  # one worker killed and started again: the start goes on
            ends.setdefault(event["start"], (event["t"], kind))
    output = {e["start"]: e for e in history.of_type("start_output")}
    requests: dict[int, list[float]] = {}
    for r in history.of_type("request"):
        if r.get("start") is not None:
            requests.setdefault(r["start"], []).append(r["t"])
    paces = []
    for started in history.of_type("process_started"):
        index, began = started["start"], started["t"]
        end, ended_by = ends.get(index, (finished, "run_finished"))
        times = sorted(t for t in requests.get(index, []) if t <= end)
        gaps = [b - a for a, b in zip(times, [*times[1:], end])]
        begun = any(earlier < index for earlier in requests)  # an earlier start made a request: the crawl had begun
        if allowed is not None and begun:  # alive past the measured start-up without a request: waiting
            gaps.append(max(0.0, (times[0] if times else end) - began - allowed))
        said = output.get(index, {})
        paces.append(StartPace(index + 1, round(end - began, 3), round(times[0] - began, 3) if times else None,
                               round(max(gaps, default=0.0), 3), round(end - (times[-1] if times else began), 3),
                               ended_by, list(said.get("stderr_tail", [])), list(said.get("stdout_tail", []))))
    return paces


def stalled_starts(history: History, verdict: RunVerdict) -> list[StartPace]:
    """The starts worth quoting: every start when the crawl did not finish, else those that waited long
    without a request (`defaults.STALL_S`) after their first."""
    paces = start_paces(history)
    if verdict.outcome == "timed_out":
        return paces
    return [p for p in paces if p.waiting_s >= defaults.STALL_S]


def liveness(e) -> CheckResult:
    """The crawl finished inside the time limit; what it had not stored when it was stopped is said here, as
    not stored because the crawl did not finish (never lost)."""
    v = e.verdict
    if v.outcome != "timed_out":
        return judged([])
    limit = required_event(e.history, "run_started")["time_limit_s"]
    stopped = e.history.first("time_limit") or {}
    held = stopped.get("held_leases", [])
    claims = (f"; the store still held {len(held)} claim(s) ({', '.join(held[:EXAMPLES])}), one of them"
              f" unfetched for {v.longest_claim_stall_s:g}s after the kill that left it") if held else ""
    unstored = (f"; {v.not_stored_unfinished} of {len(e.catalog.products)} records not stored because the crawl"
                f" did not finish (not counted as lost)") if v.not_stored_unfinished else ""
    restarts = restart_words(e.history, stopped.get("start"))
    if stopped.get("no_progress_s") is not None:
        message = (f"liveness: start {stopped['start'] + 1} made no progress (no request, no output, no store"
                   f" change) for {stopped['no_progress_s']:g}s{_cpu_wait(stopped)}, so the run was stopped{unstored}"
                   f"{claims}{restarts}")
    else:
        message = (f"liveness: the crawl had not finished after the {limit:g}s time limit{_cpu_wait(stopped)}"
                   f"{unstored}{claims}{restarts}")
    return judged([(Finding.LIVENESS, message)], {"time_limit_s": limit, "held_leases": len(held),
                                                 "not_stored_unfinished": v.not_stored_unfinished})


def restart_words(history: History, stopped: int | None) -> str:
    """What a liveness finding adds when the restarts came after a delay (--restart-delay, `restart_delayed`): the
    delays, and what the stopped start said while it waited (a crawler may wait out on restart what its killed
    start held: feapder's REQUEST_LOST_TIMEOUT). Empty when every restart came at once."""
    delayed = history.of_type("restart_delayed")
    if not delayed:
        return ""
    waits = ", ".join(f"{event['seconds']:g}s" for event in delayed[:EXAMPLES]) + (", ..." if len(delayed) > EXAMPLES
                                                                                     else "")
    words = (f"; the starts after a kill began {waits} after it (--restart-delay {delayed[-1]['restart_delay']},"
             " not counted against the time limit)")
    pace = next((p for p in start_paces(history) if stopped is not None and p.start == stopped + 1), None)
    said = pace.words() if pace is not None else []
    if pace is not None:
        words += (f"; start {pace.start} said, while it waited: {' / '.join(quoted(line) for line in said)}" if said
                  else f"; start {pace.start} said nothing while it waited")
    return words


def _cpu_wait(stopped: dict) -> str:
    """What the stopped start spent waiting for a CPU, which was not counted against it."""
    waited = stopped.get("cpu_wait_s")
    return f" (not counting {waited:g}s it or killtest waited for a CPU)" if waited else ""
