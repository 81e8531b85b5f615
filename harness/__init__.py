"""killtest: SIGKILL scrapers for real, on a seeded schedule, and count what they leave behind.

The package is a house of rooms, one responsibility each (docs/architecture.md has the map and the
import rule that tests/test_architecture.py holds):

- floor modules: errors.py, files.py, history.py (the only interface between running and checking),
  published.py (the article's figures), defaults.py, options.py and option_kinds.py (every default, every option),
  tool_envs.py, env_contents.py and env_builds.py (pinned envs built once, on first use: cases, the recording
  proxy, designs; their builders' turns)
- design/: design specs, the design model, the built-in registry, store kinds
- faults/: kill-point kinds, schedules, the line tracer, the bug zoo's scenarios
- running/: the one orchestrator, the runner, processes, pre-fork, explore and zoo plans
- check/: pure functions of a history and a catalog: verdicts, findings, comparisons
- report/: results files, tables and plots made from verdicts
- servers/: private PostgreSQL and Redis on loopback
- bench/: measurements, not tests
- cli/: one module per `killtest` command
"""
