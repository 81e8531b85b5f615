"""The designs killtest ships, each read from its spec file, and the lookup of a design by name or path."""

from __future__ import annotations

import glob
import os

from harness.design.model import PROJECT_ROOT, Design
from harness.errors import KilltestError
from harness.design.specfile import load_spec

# The built-in designs are specs like any user's: scrapers/*.toml, the bug zoo in scrapers/zoo/ and
# other frameworks' crawlers in scrapers/peers/ (which need the `peers` extra to run).
BUILT_IN_SPECS = [spec for folder in ("", "zoo", "peers")
                  for spec in sorted(glob.glob(os.path.join(PROJECT_ROOT, "scrapers", folder, "*.toml")))]
BUILT_IN_DESIGNS: dict[str, Design] = {design.name: design for design in map(load_spec, BUILT_IN_SPECS)}


def design_named(name: str) -> Design:
    """A built-in design by name, or any design by the path of its spec file (ends in .toml)."""
    if name.endswith(".toml") or os.sep in name:
        return load_spec(name)
    try:
        return BUILT_IN_DESIGNS[name]
    except KeyError:
        known = ", ".join(sorted(BUILT_IN_DESIGNS))
        raise KilltestError(f"unknown design {name!r}; known designs: {known}; or give the path of a"
                            " design spec (.toml)") from None
