"""Reporting: what people and machines read after a campaign, made from verdicts and histories only.

Rule: this room reads verdicts (check) and histories (history) and writes files; it
never starts a process, a site or a server, and never judges a run (a figure that decides PASS or
FAIL belongs to check). It may import the floor, check and design (names
and spec data), nothing from running, faults, servers, bench or cli.

- campaign.py: the campaign's verdicts and its summary figures per design
- sections.py: the report's content as plain data; render.py: Markdown and static HTML from it
- writer.py: results/NAME.{json,md,html,png}, each replaced whole (files)
- campaign_plot.py, timeline.py: the campaign plot and one timeline per run, from the history
- scaling_table.py, zoo_table.py: the worker-scaling and bug-zoo tables
- baseline_file.py: reading a saved campaign to compare with
- reference.py: the reference tables of docs/reference/, generated from the code
"""
