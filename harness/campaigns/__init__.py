"""Campaigns: many runs, and the decision of what to run next.

Each campaign is a plan of runs that goes through the one orchestrator of harness/running/: an
exploration of every crash point (exploration.py, with the words for a point in point_words.py, the
source location of a store write in locate.py, each kind of failure located as it goes in locator.py, and
jobs in processes of their own in parallel.py); a fuzz of mixed schedules (fuzzing.py, fuzz_schedules.py,
fuzz_plan.py, and the failure database in fuzz_database.py); the bug zoo (zoo_runs.py); real frameworks at
pinned releases (case_plan.py, their environments through case_envs.py and case_installed.py, doors to the
floor's tool_envs.py); and a recording of a user's own site, kill-tested against its replay (record_site.py,
recording_changes.py).

Import rule: campaigns may import running and everything below it (faults, design, check, report,
servers, the floor); running never imports campaigns. bench and cli import campaigns.
"""
