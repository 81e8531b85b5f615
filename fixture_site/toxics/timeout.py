"""The timeout toxic: the site holds the connection `hold` seconds without a byte, then drops it."""

from __future__ import annotations

from typing import Any

from killtest.fixture_site.toxics import Injection, Setting, ToxicBase, Toxics


class Timeout(ToxicBase):
    name = "timeout"
    description = "the site holds the connection hold seconds without a byte, then drops it (hold=SECONDS, default 2)"
    order = 5
    settings = {"hold": Setting(2.0)}

    def inject(self, toxics: Toxics, injection: Injection) -> Any:
        injection.hold(toxics.setting("hold"))
        return injection.drop()


TOXIC = Timeout()
