"""A user's crawler brings its own pace: before its killed runs, one unkilled start measures it.

The article's schedule (kills 0.2-1.0 s after each start, a 120 s limit) was right for its 0.2 s Python
scraper; a browser crawler takes 2.6 s to its first request and 200 s for the article's shop, so at those
figures every kill lands before work and the crawl is cut by the time limit. So, for a design of the
user's own run on seeded timed kills, `run` first crawls once without a kill and reads from that start's
history its start-up (spawn to first request) and its crawl time (spawn to exit). The kills are then
`f` points (harness/faults/points/first_request.py), counted from each start's own first request, not
from its spawn: a later start slower to its first request than the measured one (timings move by a third
from run to run, a browser's more) is still killed at work. Each comes the article's 0.2-1.0 s after that
request, shrunk to the first half of the work when the crawl is shorter than that; a start that makes no
request within FIRST_REQUEST_WAIT_STARTUPS measured start-ups of its spawn is waiting (on what a killed
start held), and is killed that long plus its delay after the spawn. The time limit is every kill at its
latest plus a few unkilled crawls, never below the default. A figure the user gave (--kill-delay,
--time-limit) is used exactly and not measured for: `--kill-delay 3,5` keeps its meaning, seconds after
the spawn; `--kill-delay f0.2,1:7.8` (what the pin line prints) is the measured kind.

Deterministic: the same seed gives the same schedule from the same figures (`timed_schedule` is a
function of the seed and the range), and the figures are printed with the options that pin them, which
skip the measuring; each failure's replay line names its exact kill points and time limit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from killtest.harness import defaults
from killtest.harness.check.checker import check_run
from killtest.harness.check.complaint import complaint
from killtest.harness.check.verdict import RunVerdict
from killtest.harness.design.model import Design
from killtest.harness.errors import KilltestError
from killtest.harness.faults.schedule import KillSchedule
from killtest.harness.history import History
from killtest.harness.promises import Promise
from killtest.harness.report.start_pace import kills_after_words
from killtest.harness.running.campaign_plan import CampaignPlan
from killtest.harness.running.orchestrator import run_phase, stage


@dataclass(frozen=True)
class MeasuredPace:
    """What one unkilled start of each design showed (the slowest design's figures), and what was made of them."""

    designs: tuple[str, ...]
    startup_s: float  # spawn to first request, the slowest design's
    crawl_s: float  # spawn to exit of the unkilled crawl, the slowest design's
    after_first_request_s: tuple[float, float]  # the kill window after each start's first request
    kill_delay_s: tuple[float, float]  # what the kills use: measured, or the user's --kill-delay
    time_limit_s: float  # what the runs use: measured, or the user's --time-limit
    # The kills count from each start's first request, waited for this long after the spawn (`f` points);
    # None: from the spawn (`t` points), as the user's --kill-delay LOW,HIGH asked.
    first_request_wait_s: float | None = None
    spread: bool = False  # the kills spread over the range, one per slice (`f0.2~5.3:7.8`), not uniform in it

    @property
    def kill_delay_option(self) -> str:
        """The --kill-delay that gives these kills back: `f0.2~5.3:7.8` for measured kills spread over the work,
        `f0.2,1:7.8` for `f` points drawn uniformly, `3,5` for `t` points."""
        low, high = self.kill_delay_s
        if self.first_request_wait_s is None:
            return f"{low:g},{high:g}"
        return f"f{low:g}{'~' if self.spread else ','}{high:g}:{self.first_request_wait_s:g}"

    @property
    def pin(self) -> str:
        return f"--kill-delay {self.kill_delay_option} --time-limit {self.time_limit_s:g}"

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "pin": self.pin, "kill_delay_option": self.kill_delay_option}


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


def refuse_unkilled_losses(verdict: RunVerdict, products: int) -> None:
    """A one-line error when the unkilled start crawled to its end but left records of the shop unstored: every
    killed run would then count them lost, and a crash's loss could not be told from the crawl's own (a crawler
    that skips the first listing page, /list/0, lost 20 of 500 in every run here, blamed on its kills)."""
    if not verdict.missing_records:
        return
    lost = verdict.categories.get("lost", {})
    shown = ", ".join(lost.get("examples", [])[:5])
    more = verdict.missing_records - len(lost.get("examples", [])[:5])
    raise KilltestError(
        f"one unkilled start of {verdict.design}, run to measure its pace before the killed runs, crawled to its end"
        f" and left {verdict.missing_records} of {products} records"
        f" unstored with no kill at all ({shown}{f' and {more} more' if more > 0 else ''}): every killed run would"
        " count them lost, so fix the crawl first (`killtest serve` shows the shop: its listing starts at /list/0),"
        " or say in the spec that it does not promise every record (does_not_promise = [\"no_lost_records\"])")


def paced(startup_s: float, crawl_s: float, kills: int, kill_delay_s: tuple[float, float] | None,
          time_limit_s: float | None, designs: Sequence[str],
          first_request_wait_s: float | None = None, spread: bool = False) -> MeasuredPace:
    """The kill delays and time limit made from the measured figures, the user's own where given: `kill_delay_s`
    counted from the spawn, or from the first request when `first_request_wait_s` comes with them (spread over
    them, not uniform, with `spread`). Measured, the kills are spread over the whole work: early, middle, late."""
    work_s = max(crawl_s - startup_s, 0.0)
    high = defaults.KILL_WINDOW_SHARE * work_s
    low = round(min(defaults.KILL_DELAY[0], high / 5), 2)
    after = (max(low, 0.01), round(max(high, low + 0.01), 2))  # a window, even for a crawl with next to no work
    wait: float | None = first_request_wait_s
    if kill_delay_s is None:  # measured: from each start's first request, waited for a few start-ups
        delays, wait, spread = after, first_request_wait(startup_s), True
    else:
        delays = kill_delay_s
    latest = delays[1] if wait is None else wait + delays[1]  # a kill's latest, after its start's spawn
    limit = time_limit_s or max(defaults.TIME_LIMIT_S,
                                float(round(kills * latest + defaults.TIME_LIMIT_CRAWLS * crawl_s)))
    return MeasuredPace(tuple(designs), startup_s, crawl_s, after, delays, limit, wait, spread and wait is not None)


def first_request_wait(startup_s: float) -> float:
    """How long after its spawn a start's first request is waited for: a few measured start-ups, so a slow start
    is still starting, not waiting; at least a second, as a 0.1 s start-up may take several times that here."""
    return max(round(startup_s * defaults.FIRST_REQUEST_WAIT_STARTUPS, 2), 1.0)


def needs_measuring(designs: Sequence[Design], given: Sequence[str], timed: bool,
                    kill_delay_given: bool, time_limit_given: bool) -> bool:
    """A design of the user's own (given by path, not a built-in name), on timed kills, with a figure to measure.
    The built-in designs keep the article's published schedule and limit (`make killtest`)."""
    own = any(word.endswith(".toml") or "/" in word for word in given)
    return timed and own and bool(designs) and not (kill_delay_given and time_limit_given)


def measure_pace(plan: CampaignPlan, kill_delay_s: tuple[float, float] | None, time_limit_s: float | None,
                 say: Callable[[str], None], first_request_wait_s: float | None = None,
                 spread: bool = False) -> MeasuredPace:
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
            if plan.toxics is None and Promise.NO_LOST_RECORDS not in design.does_not_promise:
                refuse_unkilled_losses(check_run(design, 0, history, plan.catalog), len(plan.catalog.products))
    measured = paced(max(f[0] for f in figures), max(f[1] for f in figures), plan.schedules[0].kills,
                     kill_delay_s, time_limit_s, names, first_request_wait_s, spread)
    say(f"measured: first request after {measured.startup_s:g}s, crawl {measured.crawl_s:g}s; kills"
        f" {kills_after(measured)}, time limit {measured.time_limit_s:g}s (pin them: {measured.pin})")
    return measured


def kills_after(measured: MeasuredPace) -> str:
    """When the kills come, in the report's words (report/start_pace.py)."""
    return kills_after_words(measured.kill_delay_s, measured.first_request_wait_s, measured.spread)


def _labelled(say: Callable[[str], None], label: str) -> Callable[[str], None]:
    return lambda message: say(f"{label} {message}")
