"""Running: the room that starts scrapers, kills them and writes what happened into the history.

It holds the runner (one kill-test run as named phases: runner.py, with the history collected by
collect.py and the site's drift by site_drift.py), the processes of a start (processes.py), the
pre-forked launcher (prefork.py), and the ONE orchestrator (orchestrator.py: site, store servers,
pre-fork, runs, checks, results) through which every plan goes: a campaign (campaign_plan.py), an
exploration of every crash point (exploration.py) and the bug zoo (zoo_runs.py). progress.py and
phase_clock.py report where the time goes.

Import rule: running may import faults, design, check, report,
servers and the floor (errors, history, files, published, defaults, options); never
cli or bench, which import it. The history is the only thing it hands the checker.
"""
