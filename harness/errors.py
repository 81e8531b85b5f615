"""Errors the user can act on; the CLI prints them as one line and exits non-zero."""


class KilltestError(Exception):
    """Something the user asked for cannot be done; the message says what and what to do instead."""


class ScraperStartError(KilltestError):
    """The scraper exited with an error before it did any work, so there is nothing to kill-test."""
