"""The bug zoo's table: each zoo design's verdict beside the reference design's, and the replay lines."""

from __future__ import annotations

from typing import Any

from killtest.harness.defaults import ZOO_LISTING_PAGES, ZOO_PER_PAGE


def zoo_markdown(outcomes: list[Any], command: str) -> str:
    """The zoo's verdicts as Markdown; `outcomes` are killtest.harness.campaigns.zoo_runs.ZooOutcome (report/ reads
    them as plain records and does not import running/)."""
    lines = ["# The bug zoo", "", f"Command: `{command}`", "",
             "Each design below is the idempotent design with one classic mistake. It runs the scenario that"
             f" exposes the mistake ({ZOO_LISTING_PAGES} listing pages of {ZOO_PER_PAGE} products), and so does"
             " the correct design, as the control. A verdict is right when killtest reports the expected"
             " finding on the zoo design and nothing on the control.", "",
             "| design | mistake | scenario | expected finding | killtest found | control | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for o in outcomes:
        found = ", ".join(f"**{f}**" if f == o.expect else f for f in o.findings) or "nothing"
        control = "clean" if o.control_clean else ", ".join(o.control_findings)
        if getattr(o, "reference", ""):  # a fixed twin instead of the idempotent design
            control += f" ({o.reference})"
        lines.append(f"| {o.design} | {o.mistake} | {o.scenario} | {o.expect} | {found} | {control} |"
                     f" {'right' if o.as_expected else 'WRONG'} |")
    lines += ["", "Replay any of them alone:", ""] + [f"    {o.replay}" for o in outcomes]
    return "\n".join(lines) + "\n"
