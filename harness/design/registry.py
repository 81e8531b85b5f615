"""The designs killtest ships, each read from its spec file when first asked for, and the lookup by name or path.

Nothing is read at import (Flask's `create_app` rule): a broken built-in spec is the one-line
`FILE:LINE:` error of its spec, raised when a design is looked up, not a traceback at `import harness`.
"""

from __future__ import annotations

import functools
import glob
import os

from killtest.harness.design.model import PROJECT_ROOT, Design
from killtest.harness.design.specfile import load_spec
from killtest.harness.errors import KilltestError

# The built-in designs are specs like any user's: scrapers/*.toml, the bug zoo in scrapers/zoo/ and
# other frameworks' crawlers in scrapers/peers/ (whose specs pin their framework in `packages`: an env of
# its own, built the first time the design is named, never installed beside killtest).
BUILT_IN_FOLDER = os.path.join(PROJECT_ROOT, "scrapers")
SPEC_FOLDERS = ("", "zoo", "peers")


def built_in_spec_files(folder: str | None = None) -> list[str]:
    """The spec files of the built-in designs under `folder` (default: the project's scrapers/)."""
    root = folder or BUILT_IN_FOLDER
    return [spec for sub in SPEC_FOLDERS for spec in sorted(glob.glob(os.path.join(root, sub, "*.toml")))]


def built_in_designs(folder: str | None = None) -> dict[str, Design]:
    """Every built-in design by name, read on the first call and kept; a bad spec raises its one-line error."""
    return dict(_read_built_ins(folder or BUILT_IN_FOLDER))


@functools.cache
def _read_built_ins(folder: str) -> dict[str, Design]:
    designs: dict[str, Design] = {}
    for path in built_in_spec_files(folder):
        design = load_spec(path)
        if design.name in designs:
            raise KilltestError(f"{path}: design.name {design.name!r} is already the name of"
                                f" {designs[design.name].spec_file}")
        designs[design.name] = design
    return designs


def design_named(name: str, folder: str | None = None) -> Design:
    """A built-in design by name, or any design by the path of its spec file (ends in .toml)."""
    if name.endswith(".toml") or os.sep in name:
        return _ready(load_spec(name))
    designs = built_in_designs(folder)
    try:
        return _ready(designs[name])
    except KeyError:
        known = ", ".join(sorted(designs))
        raise KilltestError(f"unknown design {name!r}; known designs: {known}; or give the path of a"
                            " design spec (.toml)") from None


def _ready(design: Design) -> Design:
    """A design named to be run has the env of its spec's `packages` built now, on first use, before any
    run's clock starts (listing the built-ins builds nothing)."""
    if design.packages:
        _ = design.python  # the property builds the env
    return design
