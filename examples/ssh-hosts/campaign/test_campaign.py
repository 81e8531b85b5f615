"""A campaign's crash points as pytest items, for pytest-xdist to spread over machines (docs/how-to/pytest.md).

The design is a built-in one, so a host needs only the killtest wheel; a design of your own would be
shipped beside this file, at the same relative path.
"""

import pytest

from killtest import crash_points, explore

DESIGN = "zoo-done-before-record"
OPTIONS = {"listing_pages": 2, "per_page": 3}
# Request and line points, which number the same on every recording (each worker makes its own), and the
# store write known to lose a record; late store writes of a file store can shift by one (docs/how-to/pytest.md),
# and so can their after-twins (aw<n>).
POINTS = [p for p in crash_points(DESIGN, **OPTIONS) if not p.startswith(("w", "aw"))] + ["w68"]


@pytest.mark.parametrize("point", POINTS)
def test_crash_point(point, tmp_path):
    explore(DESIGN, only=point, out=tmp_path, **OPTIONS).assert_passed()
