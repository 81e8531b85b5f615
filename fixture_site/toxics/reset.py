"""The reset toxic: the connection is closed with a TCP reset before any answer."""

from __future__ import annotations

from typing import Any

from killtest.fixture_site.toxics import Injection, ToxicBase, Toxics


class Reset(ToxicBase):
    name = "reset"
    description = "the connection is closed with a TCP reset before any answer"
    order = 3

    def inject(self, toxics: Toxics, injection: Injection) -> Any:
        return injection.drop()


TOXIC = Reset()
