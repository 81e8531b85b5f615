"""Errors the user can act on; the CLI prints them as one line and exits non-zero."""

import importlib.util


class KilltestError(Exception):
    """Something the user asked for cannot be done; the message says what and what to do instead."""


class ScraperStartError(KilltestError):
    """The scraper exited with an error before it did any work, so there is nothing to kill-test."""


def require_module(module: str, extra: str, for_what: str) -> None:
    """A one-line KilltestError when `module` (a package of the optional extra `extra`) is not installed."""
    if importlib.util.find_spec(module) is None:
        raise KilltestError(f"{for_what} needs the Python package {module!r}, which is not installed here:"
                            f" pip install 'killtest[{extra}]'")
