"""One run's timeline as inline SVG, for the triage page: starts, requests, records stored, kills, pauses
and power cuts on one time axis (Jepsen draws its histories; this is the small version).

Drawn from `check.distinct.timeline_events` (plain lists), as text: no matplotlib, so the page is written
on a core install too, and in milliseconds. Every mark carries a <title>, the browser's tooltip.
"""

from __future__ import annotations

import html

WIDTH, LEFT, RIGHT = 900, 110, 12
LANES = (("start", "starts", "#888"), ("request", "requests", "#2b6cb0"), ("write", "records stored", "#2f855a"),
         ("kill", "kills", "#c53030"), ("power", "power cuts", "#6b46c1"), ("pause", "pauses", "#2c7a7b"),
         ("crash", "crashes", "#b7791f"))
LANE_H = 18
_LANE_OF_EVENT = {"paused": "pause", "resumed": "pause"}  # else an event's kind is its lane


def lanes_drawn(timelines: list[dict]) -> tuple[str, ...]:
    """The lanes (LANES' kinds) any of `timelines` has an event in: a page draws those, and says once which it
    left out (an empty "records stored" lane for a design whose store keeps no write time says nothing)."""
    used = {_LANE_OF_EVENT.get(kind, kind) for timeline in timelines for _, kind, _ in timeline.get("events", [])}
    return tuple(kind for kind, _, _ in LANES if kind in used)


def timeline_svg(timeline: dict, label: str, lanes: tuple[str, ...] | None = None) -> str:
    """The SVG element for one run's `timeline_events`; `label` names it for a screen reader; `lanes`: the LANES
    kinds drawn (all by default)."""
    end = max(float(timeline.get("end") or 0.0), 1e-3)
    events = timeline.get("events", [])
    scale = (WIDTH - LEFT - RIGHT) / end
    shown = [lane for lane in LANES if lanes is None or lane[0] in lanes] or list(LANES[:1])
    height = LANE_H * len(shown) + 28
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" height="{height}"'
           f' viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{html.escape(label)}">']
    lane_of = {kind: i for i, (kind, _, _) in enumerate(shown)}
    for i, (_, name, colour) in enumerate(shown):
        y = i * LANE_H + 4
        out.append(f'<text x="4" y="{y + 12}" font-size="11" fill="{colour}">{name}</text>')
        out.append(f'<line x1="{LEFT}" y1="{y + LANE_H - 2}" x2="{WIDTH - RIGHT}" y2="{y + LANE_H - 2}"'
                   ' stroke="#eee"/>')
    paused_at: float | None = None
    for t, kind, text in events:
        x = LEFT + t * scale
        tip = f"<title>{t:.3f} s: {html.escape(str(text))}</title>"
        if kind == "paused":
            paused_at = t
            continue
        if kind == "resumed" and paused_at is not None and "pause" in lane_of:
            y = lane_of["pause"] * LANE_H + 4
            out.append(f'<rect x="{LEFT + paused_at * scale:.1f}" y="{y}" width="{max((t - paused_at) * scale, 2):.1f}"'
                       f' height="{LANE_H - 4}" fill="#2c7a7b" opacity="0.5">{tip}</rect>')
            paused_at = None
            continue
        if kind == "time_limit":  # not a crash: the harness stopped the run, a mark of its own across every lane
            out.append(f'<line class="time-limit" x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{LANE_H * len(shown) + 2}"'
                       f' stroke="#000" stroke-width="2" stroke-dasharray="6,3">{tip}</line>'
                       f'<text x="{x - 3:.1f}" y="{LANE_H * len(shown)}" font-size="10" text-anchor="end"'
                       f' fill="#000">{html.escape(str(text))}</text>')
            continue
        lane = lane_of.get(kind)
        if lane is None:
            continue
        colour = shown[lane][2]
        y = lane * LANE_H + 4
        if kind in ("kill", "power", "start"):  # across every lane: what the rest of the run follows
            dash = ' stroke-dasharray="3,3"' if kind == "start" else ""
            out.append(f'<line x1="{x:.1f}" y1="4" x2="{x:.1f}" y2="{LANE_H * len(shown)}" stroke="{colour}"'
                       f' stroke-width="{1 if kind == "start" else 2}"{dash} opacity="0.6"/>')
        out.append(f'<rect x="{x - 1.5:.1f}" y="{y + 2}" width="3" height="{LANE_H - 6}" fill="{colour}">{tip}</rect>')
    if paused_at is not None and "pause" in lane_of:  # a pause the run ended in
        y = lane_of["pause"] * LANE_H + 4
        out.append(f'<rect x="{LEFT + paused_at * scale:.1f}" y="{y}" width="{max((end - paused_at) * scale, 2):.1f}"'
                   f' height="{LANE_H - 4}" fill="#2c7a7b" opacity="0.5"><title>paused</title></rect>')
    axis_y = LANE_H * len(shown) + 6
    out.append(f'<line x1="{LEFT}" y1="{axis_y}" x2="{WIDTH - RIGHT}" y2="{axis_y}" stroke="#444"/>')
    step = _tick_step(end)
    tick = 0.0
    while tick <= end + 1e-9:
        x = LEFT + tick * scale
        out.append(f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 4}" stroke="#444"/>'
                   f'<text x="{x:.1f}" y="{axis_y + 16}" font-size="10" text-anchor="middle">{tick:g} s</text>')
        tick = round(tick + step, 6)
    out.append("</svg>")
    return "".join(out)


def _tick_step(end: float) -> float:
    """A round step giving five to ten ticks."""
    for step in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600):
        if end / step <= 10:
            return float(step)
    return end / 10
