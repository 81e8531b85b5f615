"""Faults: what ends or disturbs a scraper's start, described as data the runner acts on.

It holds the kill-point kinds (points/: one module per kind, each owning its text, its replay
spec, its validation and what the runner does with it), kill schedules and their seeded generators
(schedule.py), the tracer that kills a Python design at one line from inside its own process
(tracer.py), and the bug zoo's scenarios read from the zoo designs' specs (zoo_scenarios.py). The
site's own network faults live with the site, in fixture_site/toxics/.

Import rule: faults may import design, check and the floor (errors, history,
files, published, defaults, options); never running, report, cli,
servers or bench. What a point needs from a run reaches it through the small
protocols of faults.points (Target, Armed), which the runner implements.
"""
