"""The throttle toxic: HTTP 429 with `Retry-After: <retry_after>` seconds, which a polite client honours."""

from __future__ import annotations

from typing import Any

from killtest.fixture_site.toxics import Injection, Setting, ToxicBase, Toxics

STATUS = 429


class Throttle(ToxicBase):
    name = "throttle"
    description = "HTTP 429 with Retry-After: retry_after seconds (retry_after=SECONDS, default 1)"
    order = 2
    status = STATUS
    settings = {"retry_after": Setting(1, whole=True)}

    def inject(self, toxics: Toxics, injection: Injection) -> Any:
        retry_after = self.settings["retry_after"].shown(toxics.setting("retry_after"))
        return injection.answer(STATUS, "too many requests\n", {"Retry-After": retry_after})


TOXIC = Throttle()
