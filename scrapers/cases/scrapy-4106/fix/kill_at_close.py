"""A Scrapy extension that SIGKILLs the crawler in its spider_closed handler, which runs before the feed exporter's
(EXTENSIONS order -1): a kill in the close sequence after the scheduler has closed (the exploration's w18/w19)."""

import os
import signal

from scrapy import signals


class KillAtSpiderClosed:
    @classmethod
    def from_crawler(cls, crawler: object) -> "KillAtSpiderClosed":
        ext = cls()
        crawler.signals.connect(ext.closed, signal=signals.spider_closed)  # type: ignore[attr-defined]
        return ext

    def closed(self, spider: object, reason: str) -> None:
        os.kill(os.getpid(), signal.SIGKILL)
