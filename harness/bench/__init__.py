"""`killtest bench`: measurements, not tests. Peers under the same kills, each fault against each
design, the idempotent design as the catalog grows, and the harness's own cost; results/bench.{json,md}
and plots.

Rule: a benchmark reports figures from runs and fails only on a broken promise, never on a timing;
timing-sensitive expectations live here, not in the test suite. It runs campaigns through
running like any command, and may import every room but cli.
"""
