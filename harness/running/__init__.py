"""Running: the room of ONE run: start scrapers, kill them and write what happened into the history.

It holds the runner (one kill-test run as named phases: runner.py, with the history collected by
collect.py and the site's drift by site_drift.py), the processes of a start (processes.py,
start_watch.py, target.py; exit_wait.py sleeps until one of them exits), the pre-forked launcher (prefork.py),
the exact store-write plans a run follows (write_plans.py), a recorded site served for a run (recorded.py),
and the ONE orchestrator (orchestrator.py: site, store servers, pre-fork, runs, checks, results) through which
every plan goes, with the plan it executes (campaign_plan.py). progress.py and phase_clock.py report where the
time goes.

The campaigns that run many runs and decide what to run next (explore, fuzz, the zoo, the cases,
recording) live one floor up, in harness/campaigns/.

Import rule: running may import faults, design, check, report, servers and the floor (errors,
history, files, published, defaults, options); never campaigns, bench or cli, which import it. The
history is the only thing it hands the checker.
"""
