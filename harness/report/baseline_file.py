"""Read a saved campaign (a killtest.json copied aside) as the baseline to compare a run with.

The comparison itself is a pure function of two lists of runs (killtest.harness.check.baseline); reading the
file is I/O, so it lives here, where the room may touch files.
"""

from __future__ import annotations

import json

from killtest.harness.errors import KilltestError


def load_baseline(path: str) -> list[dict]:
    """The runs of a saved campaign; a clear error if the file is missing or is not a killtest result."""
    try:
        with open(path, encoding="utf-8") as src:
            saved = json.load(src)
    except FileNotFoundError:
        raise KilltestError(f"--baseline {path!r} does not exist; save one by copying the killtest.json"
                            " of a run you trust") from None
    except (OSError, ValueError) as error:
        raise KilltestError(f"--baseline {path!r} is not a readable JSON file: {error}") from None
    runs = saved.get("runs") if isinstance(saved, dict) else None
    if not runs or not all(isinstance(r, dict) and "design" in r and "wall_s" in r for r in runs):
        raise KilltestError(f"--baseline {path!r} holds no runs; it should be the killtest.json of a finished run")
    return runs
