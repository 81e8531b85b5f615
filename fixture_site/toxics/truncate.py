"""The truncate toxic: HTTP 200 with only the first half of the page.

Its Content-Length says so, as a cut cache or proxy would send it: only a client that checks the
page is whole notices.
"""

from __future__ import annotations

from typing import Any

from killtest.fixture_site.toxics import ToxicBase, Toxics


class Truncate(ToxicBase):
    name = "truncate"
    description = "HTTP 200 with only the first half of the page, and a Content-Length that agrees"
    order = 4

    def alter(self, toxics: Toxics, response: Any) -> None:
        body = response.get_data()
        response.set_data(body[: len(body) // 2])  # set_data sets the Content-Length to match


TOXIC = Truncate()
