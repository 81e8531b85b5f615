"""A user's crawler brings its own pace: before its killed runs, one unkilled start measures it.

The article's schedule (kills 0.2-1.0 s after each start, a 120 s limit) was right for its 0.2 s Python
scraper; a browser crawler takes 2.6 s to its first request and 200 s for the article's shop, so at those
figures every kill lands before work and the crawl is cut by the time limit. So, for a design of the
user's own run on seeded timed kills, `run` first crawls once without a kill and reads from that start's
history its start-up (spawn to first request) and its crawl time (spawn to exit). The kill delays are
then counted from the first request: the measured start-up (with a margin, as timings move by a third
from run to run) plus the article's 0.2-1.0 s, shrunk to the first half of the work when the crawl is
shorter than that; the time limit is every kill at its latest plus a few unkilled crawls, never below
the default. A figure the user gave (--kill-delay, --time-limit) is used exactly and not measured for.

Deterministic: the same seed gives the same schedule from the same figures (`timed_schedule` is a
function of the seed and the range), and the figures are printed with the options that pin them, which
skip the measuring; each failure's replay line names its exact kill points and time limit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from killtest.harness import defaults
from killtest.harness.check.complaint import complaint
from killtest.harness.design.model import Design
from killtest.harness.errors import KilltestError
from killtest.harness.faults.schedule import KillSchedule
from killtest.harness.history import History
from killtest.harness.running.campaign_plan import CampaignPlan
from killtest.harness.running.orchestrator import run_phase, stage


@dataclass(frozen=True)
class MeasuredPace:
    """What one unkilled start of each design showed (the slowest design's figures), and what was made of them."""

    designs: tuple[str, ...]
    startup_s: float  # spawn to first request, the slowest design's
    crawl_s: float  # spawn to exit of the unkilled crawl, the slowest design's
    after_first_request_s: tuple[float, float]  # the kill window after the (margined) start-up
    kill_delay_s: tuple[float, float]  # what the kills use: measured, or the user's --kill-delay
    time_limit_s: float  # what the runs use: measured, or the user's --time-limit

    @property
    def pin(self) -> str:
        return f"--kill-delay {self.kill_delay_s[0]:g},{self.kill_delay_s[1]:g} --time-limit {self.time_limit_s:g}"

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "pin": self.pin}


def figures_of(history: History) -> tuple[float, float]:
    """(start-up, crawl) of an unkilled run's one start: a one-line error when it did not crawl to its end."""
    finished = history.first("run_finished") or {}
    started = history.first("process_started")
    requests = [r for r in history.of_type("request") if r.get("start") == 0]
    exited = history.first("process_exited")
    if finished.get("outcome") != "completed" or started is None or exited is None or not requests:
        crash = history.first("crash")
        why = (f"it exited with status {crash['returncode']}: {complaint(crash['stderr_tail'] or ['(no output)'])}"
               if crash else "it made no request" if not requests else
               f"it had not finished after {finished.get('wall_s', 0):g}s")
        raise KilltestError(f"one unkilled start of the design, run to measure its pace before the killed runs, did"
                            f" not crawl to its end ({why}): fix the crawl, or pin the figures with --kill-delay"
                            " LOW,HIGH and --time-limit SECONDS")
    return round(requests[0]["t"] - started["t"], 3), round(exited["t"] - started["t"], 3)


def paced(startup_s: float, crawl_s: float, kills: int, kill_delay_s: tuple[float, float] | None,
          time_limit_s: float | None, designs: Sequence[str]) -> MeasuredPace:
    """The kill delays and time limit made from the measured figures, the user's own where given."""
    work_s = max(crawl_s - startup_s, 0.0)
    high = min(defaults.KILL_DELAY[1], defaults.KILL_WINDOW_SHARE * work_s)
    after = (round(min(defaults.KILL_DELAY[0], high / 5), 2), round(high, 2))
    begin = startup_s * defaults.STARTUP_MARGIN
    delays = kill_delay_s or (round(begin + after[0], 2), round(max(begin + after[1], begin + after[0] + 0.01), 2))
    limit = time_limit_s or max(defaults.TIME_LIMIT_S,
                                float(round(kills * delays[1] + defaults.TIME_LIMIT_CRAWLS * crawl_s)))
    return MeasuredPace(tuple(designs), startup_s, crawl_s, after, delays, limit)


def needs_measuring(designs: Sequence[Design], given: Sequence[str], timed: bool,
                    kill_delay_given: bool, time_limit_given: bool) -> bool:
    """A design of the user's own (given by path, not a built-in name), on timed kills, with a figure to measure.
    The built-in designs keep the article's published schedule and limit (`make killtest`)."""
    own = any(word.endswith(".toml") or "/" in word for word in given)
    return timed and own and bool(designs) and not (kill_delay_given and time_limit_given)


def measure_pace(plan: CampaignPlan, kill_delay_s: tuple[float, float] | None, time_limit_s: float | None,
                 say: Callable[[str], None]) -> MeasuredPace:
    """One unkilled start of every design of `plan`, on its site and settings; the slowest design's figures."""
    names = [d.name for d in plan.designs]
    say(f"measuring the pace of {', '.join(names)} from one unkilled start each, before the killed runs"
        f" (--kill-delay and --time-limit pin the figures and skip this)")
    settings = dataclasses.replace(plan.settings, time_limit_s=time_limit_s or defaults.MEASURE_TIME_LIMIT_S)
    figures = []
    with stage(plan.catalog, plan.designs, latency_s=plan.latency_s, slow_pages=plan.slow_pages,
               pace_rps=plan.pace_rps, prefork=plan.prefork, disk=plan.settings.disk) as on:
        for design in plan.designs:
            on.site.set_toxics(plan.toxics, plan.toxic_seed)
            history = run_phase(on, design, KillSchedule(None, ()), settings, work_dir=plan.work_dir,
                                prefix="killtest-pace-", on_progress=_labelled(say, f"[{design.name} pace]"))
            figures.append(figures_of(history))
    measured = paced(max(f[0] for f in figures), max(f[1] for f in figures), plan.schedules[0].kills,
                     kill_delay_s, time_limit_s, names)
    say(f"measured: first request after {measured.startup_s:g}s, crawl {measured.crawl_s:g}s; kill delays"
        f" {measured.kill_delay_s[0]:g}-{measured.kill_delay_s[1]:g}s after each start, time limit"
        f" {measured.time_limit_s:g}s (pin them: {measured.pin})")
    return measured


def _labelled(say: Callable[[str], None], label: str) -> Callable[[str], None]:
    return lambda message: say(f"{label} {message}")
