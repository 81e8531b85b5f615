"""The error toxic: HTTP 503, a server error a client should retry."""

from __future__ import annotations

from typing import Any

from killtest.fixture_site.toxics import Injection, ToxicBase, Toxics

STATUS = 503


class ServerError(ToxicBase):
    name = "error"
    description = "HTTP 503, a server error a client should retry"
    order = 1
    status = STATUS

    def inject(self, toxics: Toxics, injection: Injection) -> Any:
        return injection.answer(STATUS, "the shop is having a moment\n")


TOXIC = ServerError()
