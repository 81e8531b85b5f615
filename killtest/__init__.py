"""killtest: SIGKILL scrapers for real, on a seeded schedule, and count what they leave behind.

The public API (killtest/api.py, docs/reference/api.md): `load_design`, `run`, `explore`, `fuzz`, their
`Result` and `Finding`, `KilltestFailed` and `KilltestError`; for pytest-xdist, `crash_points`,
`fuzz_examples`, `fuzz_example` and `FuzzExample` (killtest/spread.py). The names are loaded on first use, so
`import killtest` stays cheap: the pytest plugin (killtest/pytest_plugin.py) imports this package in
every pytest session of an environment where killtest is installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Design", "Finding", "FuzzExample", "KilltestError", "KilltestFailed", "Result", "__version__",
           "crash_points", "explore", "fuzz", "fuzz_example", "fuzz_examples", "load_design", "run"]
_SPREAD = {"FuzzExample", "crash_points", "fuzz_example", "fuzz_examples"}  # killtest/spread.py

if TYPE_CHECKING:
    from killtest.api import Design, Finding, KilltestError, KilltestFailed, Result, explore, fuzz, load_design, run
    from killtest.spread import FuzzExample, crash_points, fuzz_example, fuzz_examples


def __getattr__(name: str) -> Any:
    """The public names, imported from killtest.api when first asked for (PEP 562)."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version
        try:
            found = version("killtest")
        except PackageNotFoundError:  # a source tree that was never installed
            found = "0+unknown"
        globals()["__version__"] = found
        return found
    if name in __all__:
        from killtest import api, spread
        value = getattr(spread if name in _SPREAD else api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'killtest' has no attribute {name!r}")
