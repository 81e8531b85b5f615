"""A run's timeline, drawn from its history alone: requests and records over time, kills, pauses and restarts
marked."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from killtest.harness.check.categories import claim_stalls, required_event  # noqa: E402
from killtest.harness.files import replacing  # noqa: E402
from killtest.harness.history import History  # noqa: E402

# A kill's downtime lasts milliseconds; drawn at its real width it would vanish at this scale.
KILL_BAND_MIN_S = 0.05


def plot_timeline(history: History, path: str, title: str) -> None:
    requests = [e["t"] for e in history.of_type("request")]
    stored = sorted(e["t"] for e in history.of_type("store_record") if e.get("stamped"))
    finished = required_event(history, "run_finished")["t"]
    starts = {e["start"]: e["t"] for e in history.of_type("process_started")}
    figure, axis = plt.subplots(figsize=(10, 3.8))
    # Each line runs on, flat, to the end of the run: a stall shows as a long flat stretch.
    axis.step(requests + [finished], [*range(1, len(requests) + 1), len(requests)], where="post",
              label="requests served")
    if stored:
        axis.step(stored + [finished], [*range(1, len(stored) + 1), len(stored)], where="post",
                  label="records stored (still in the store)")
    for i, kill in enumerate(history.of_type("kill")):
        restart = starts.get(kill["start"] + 1, finished)
        axis.axvspan(kill["t"], max(restart, kill["t"] + KILL_BAND_MIN_S), color="red", alpha=0.35,
                     label="kill until restart (SIGKILL; SIGTERM first on a redeploy)" if i == 0 else None)
    for i, (since, seconds) in enumerate(sorted(claim_stalls(history).values())):
        axis.hlines(-0.02 * products_of(history) * (1 + i % 5), since, since + seconds,
                    color="purple", linewidth=2, label="a killed start's claim, until another start fetched it"
                    if i == 0 else "_nolegend_")
    for index, t in starts.items():
        if index:
            axis.axvline(t, color="grey", linestyle=":", linewidth=0.8, label="restart" if index == 1 else None)
    for i, (since, until, label) in enumerate(pauses(history)):
        axis.axvspan(since, until, color="teal", alpha=0.25, hatch="//",
                     label="paused (SIGSTOP until SIGCONT)" if i == 0 else None)
        axis.text(since, products_of(history) * 0.5, label, fontsize=6, color="teal", rotation=90)
    for i, (since, until) in enumerate(lease_waits(history)):
        axis.axvspan(since, until, color="orange", alpha=0.2, label="waiting for a held lease" if i == 0 else None)
    products = products_of(history)
    axis.axhline(products, color="black", linewidth=0.6, linestyle="--", label=f"{products} products")
    limit = history.first("time_limit")
    if limit is not None:
        axis.axvline(limit["t"], color="black", linewidth=1.2, label="time limit: liveness failure")
    axis.set_xlabel("seconds since the first start")
    axis.set_ylabel("count")
    axis.set_xlim(0, finished)
    axis.set_title(title)
    axis.legend(fontsize=7, loc="upper left")
    axis.grid(alpha=0.3)
    # Fixed margins: tight_layout drew the whole figure once more just to measure it.
    figure.subplots_adjust(left=0.06, right=0.99, top=0.92, bottom=0.13)
    with replacing(path) as temporary:
        figure.savefig(temporary, dpi=100, format="png")
    plt.close(figure)


def lease_waits(history: History, gap_s: float = 0.01) -> list[tuple[float, float]]:
    """The scrapers' naps while a lease was held, back-to-back naps joined into one stretch.

    A wait for a 3 s lease is some sixty naps of 50 ms; drawn one by one they made a timeline
    take a third of a second to render, most of the harness's own time in `make killtest`.
    """
    naps = sorted((e["t"], e["t"] + e.get("seconds", 0.0)) for e in history.of_type("scraper_event")
                  if e["name"] == "lease_wait")
    stretches: list[tuple[float, float]] = []
    for since, until in naps:
        if stretches and since <= stretches[-1][1] + gap_s:
            stretches[-1] = (stretches[-1][0], max(stretches[-1][1], until))
        else:
            stretches.append((since, until))
    return stretches


def pauses(history: History) -> list[tuple[float, float, str]]:
    """Each pause: (SIGSTOP, SIGCONT, which workers), paired in order; one the run ended in lasts to its end."""
    resumed = history.of_type("resumed")
    end = required_event(history, "run_finished")["t"]
    spans = []
    for i, paused in enumerate(history.of_type("paused")):
        until = resumed[i]["t"] if i < len(resumed) else end
        who = "every worker" if paused.get("worker") is None else f"worker {paused['worker']}"
        spans.append((paused["t"], until, f"start {paused['start'] + 1}, {who}"))
    return spans


def products_of(history: History) -> int:
    return required_event(history, "run_started")["products"]
