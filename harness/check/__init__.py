"""Checking: pure functions of a run's history and the site's catalog. This folder cannot do any I/O.

Rule (as Flask's sansio/README): no file, socket, process, clock or server of its own, and no imports
from killtest.harness.running, report, cli, servers, bench or design; only the floor (killtest.harness.history,
killtest.harness.errors, ...) and fixture_site's data types. A design reaches a check as any object with
`.name .claims_idempotence .does_not_promise .control .side_effects` (verdict.DesignTraits); the
promises themselves are named on the floor (killtest.harness.promises), and `compose` drops the findings of
a promise the design waived. Tests build histories by
hand and call these functions directly; tests/test_architecture.py holds the rule.

- checker.py: `check_run(design, run, history, catalog) -> RunVerdict`, the one entry
- verdict.py: `Validity` (valid, invalid, unknown, and how they merge), `CheckResult`, `RunVerdict`
- findings.py: `Finding`, every finding's code, promise and one-line description; `FINDINGS`
- named_checks.py: the named checks (liveness, crash, kills_landed, records, ...) and `compose`
- complaint.py: the one line of a crashed start's stderr that says why (what `crashed` quotes)
- run_figures.py: the figures of one run (rows, records, requests, kills), counted before judging
- categories.py: records and kills sorted into lost, duplicated, unexpected, landed, in flight
- drift.py, network_faults.py, side_effects.py: what the site's drift, its faults and a design's
  files, webhooks and counter mean for the checks
- health.py: requests per stored record, the article's health metric
- compare.py: designs against the control (--check-faster); baseline.py: a campaign against a saved
  one (reading the saved file is killtest.harness.report.baseline_file's job)
"""
