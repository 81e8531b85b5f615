"""`killtest bench`: measurements, not tests. Peers under the same kills, the idempotent design as the
catalog grows, and the harness's own cost; results/bench.{json,md} and plots."""
