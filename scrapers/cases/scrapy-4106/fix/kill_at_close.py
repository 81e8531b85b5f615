"""A Scrapy extension that SIGKILLs the crawler in its spider_closed handler, which runs before the feed exporter's
(EXTENSIONS order -1): a kill in the close sequence after the scheduler has closed (the exploration's w18/w19)."""
import os
import signal

from scrapy import signals


class KillAtSpiderClosed:
    @classmethod
    def from_crawler(cls, crawler):
        ext = cls()
        crawler.signals.connect(ext.closed, signal=signals.spider_closed)
        return ext

    def closed(self, spider, reason):
        os.kill(os.getpid(), signal.SIGKILL)
