"""The latency toxic: every answer waits `latency` ± `jitter` seconds, whatever its path (no rate)."""

from __future__ import annotations

import random

from killtest.fixture_site.toxics import Setting, ToxicBase, Toxics


class Latency(ToxicBase):
    name = "latency"
    description = "every answer waits latency ± jitter seconds (latency=SECONDS, jitter=SECONDS)"
    order = 0
    rated = False
    settings = {"latency": Setting(0.0), "jitter": Setting(0.0)}

    def delay(self, toxics: Toxics, rng: random.Random) -> float:
        # Drawn for every request, even with no jitter: the fault's roll comes after this draw.
        jitter = toxics.setting("jitter")
        return max(0.0, toxics.setting("latency") + rng.uniform(-jitter, jitter))


TOXIC = Latency()
