"""killtest: SIGKILL scrapers for real, on a seeded schedule, and count what they leave behind."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("killtest")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
