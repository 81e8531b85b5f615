"""The suite's order under `--dist worksteal` (tests/conftest.py's `dealt`): worksteal gives each worker a contiguous
slice of the collection, so the order is dealt into one lane per worker, each beginning with slow tests, and a
test file's slow tests stay together (its module-scoped fixtures set up once)."""

from __future__ import annotations

from dataclasses import dataclass

from tests.conftest import dealt


@dataclass(frozen=True)
class Item:
    nodeid: str
    slow: bool


def suite() -> list[Item]:
    """Slow tests first, as the sort before dealing leaves them: 3 files of slow ones, then 13 fast tests."""
    slow = [Item(f"tests/test_{f}.py::t{i}", True) for f, n in (("a", 3), ("b", 1), ("c", 2)) for i in range(n)]
    return slow + [Item(f"tests/test_z.py::f{i}", False) for i in range(13)]


def slices(order: list[Item], workers: int) -> list[list[Item]]:
    """What worksteal sends each worker first: what is pending, divided by the workers still without work."""
    out, left = [], list(order)
    for worker in range(workers):
        size = len(left) // (workers - worker)
        out.append(left[:size])
        del left[:size]
    return out


def test_every_worker_starts_on_slow_tests_and_a_files_slow_tests_stay_on_one_worker():
    items = suite()
    order = dealt(items, 3, lambda item: item.slow)
    assert sorted(order, key=items.index) == items  # nothing lost or repeated
    first = slices(order, 3)
    assert [[i.nodeid for i in s if i.slow] for s in first] == [
        ["tests/test_a.py::t0", "tests/test_a.py::t1", "tests/test_a.py::t2"],
        ["tests/test_b.py::t0"], ["tests/test_c.py::t0", "tests/test_c.py::t1"]]
    assert all(s[0].slow for s in first) and [len(s) for s in first] == [6, 6, 7]
    assert [i.nodeid for i in order if not i.slow] == [f"tests/test_z.py::f{i}" for i in range(13)]  # kept in order


def test_one_worker_or_no_slow_test_keeps_the_order():
    items = suite()
    assert dealt(items, 1, lambda item: item.slow) == items
    fast = [i for i in items if not i.slow]
    assert dealt(fast, 4, lambda item: item.slow) == fast
