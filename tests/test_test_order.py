"""The suite's order under `--dist worksteal` (tests/conftest.py's `dealt`): worksteal gives each worker a contiguous
slice of the collection, so the order is dealt into one lane per worker, each beginning with slow tests, the
heaviest first and the lanes balanced by weight, and a test file's slow tests stay together (its module-scoped
fixtures set up once)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from tests.conftest import dealt

pytest_plugins = ["pytester"]


@dataclass(frozen=True)
class Item:
    nodeid: str
    slow: float  # 0: fast; else its weight, as `@pytest.mark.slow(cpu_s=N)` gives it


def weight(item: Item) -> float:
    return item.slow


def suite() -> list[Item]:
    """Slow tests first, as the sort before dealing leaves them: 3 files of slow ones, then 13 fast tests."""
    slow = [Item(f"tests/test_{f}.py::t{i}", 1) for f, n in (("a", 3), ("b", 1), ("c", 2)) for i in range(n)]
    return slow + [Item(f"tests/test_z.py::f{i}", 0) for i in range(13)]


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
    order = dealt(items, 3, weight)
    assert sorted(order, key=items.index) == items  # nothing lost or repeated
    first = slices(order, 3)
    assert [[i.nodeid for i in s if i.slow] for s in first] == [  # the heaviest file first, each to the lightest lane
        ["tests/test_a.py::t0", "tests/test_a.py::t1", "tests/test_a.py::t2"],
        ["tests/test_c.py::t0", "tests/test_c.py::t1"], ["tests/test_b.py::t0"]]
    assert all(s[0].slow for s in first) and [len(s) for s in first] == [6, 6, 7]
    assert [i.nodeid for i in order if not i.slow] == [f"tests/test_z.py::f{i}" for i in range(13)]  # kept in order


def test_one_worker_or_no_slow_test_keeps_the_order():
    items = suite()
    assert dealt(items, 1, weight) == items
    fast = [i for i in items if not i.slow]
    assert dealt(fast, 4, weight) == fast


def test_the_heaviest_tests_start_first_and_the_lanes_weigh_alike():
    """A 90 s test last in a lane of many slow ones started with 40 s of the step left; by weight it starts first,
    and a file's heaviest test leads its file."""
    heavy = [Item("tests/test_h.py::light", 2), Item("tests/test_h.py::heavy", 50)]
    many = [Item(f"tests/test_m{i}.py::t", 3) for i in range(10)]
    fast = [Item(f"tests/test_z.py::f{i}", 0) for i in range(40)]
    order = dealt(many + heavy + fast, 2, weight)
    first = slices(order, 2)
    assert [i.nodeid for i in first[0] if i.slow] == ["tests/test_h.py::heavy", "tests/test_h.py::light"]
    assert [sum(i.slow for i in s) for s in first] == [52, 30]  # LPT: the ten light files all went to the other
    assert sorted(order, key=(many + heavy + fast).index) == many + heavy + fast


CONFTEST = '''
import importlib.util
import pytest

spec = importlib.util.spec_from_file_location("killtest_tests_conftest", {path!r})
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)
pytest_collection_modifyitems = suite.pytest_collection_modifyitems
pytest_configure_node = suite.pytest_configure_node


def pytest_configure(config):
    config.addinivalue_line("markers", "slow(cpu_s): a slow test")
    config.addinivalue_line("markers", "serial: left out by -m")
'''


@pytest.mark.slow
def test_an_xdist_worksteal_run_deals_the_order_so_every_worker_starts_on_a_slow_test(pytester):
    """The real thing, not a model of it: pytest-xdist, two workers, worksteal. Each worker's first test to end is
    the first of its lane, a slow one (two files of one slow test each, then fast ones): a worker runs its slice
    in order. A worker's own `--dist` option says "no", which left the order undealt in every xdist run; and the
    lanes are cut after `-m` has deselected tests, or every slice boundary moves."""
    pytester.makeconftest(CONFTEST.format(path=os.path.join(os.path.dirname(__file__), "conftest.py")))
    fast = "\n".join(f"def test_fast{i}():\n    pass\n" for i in range(10))
    left_out = "import pytest\n\n" + "\n".join(f"@pytest.mark.serial\ndef test_left_out{i}():\n    pass\n"
                                                for i in range(4))
    pytester.makepyfile(test_a="import pytest\n\n@pytest.mark.slow(cpu_s=5)\ndef test_slow_a():\n    pass\n\n" + fast,
                        test_b="import pytest\n\n@pytest.mark.slow(cpu_s=4)\ndef test_slow_b():\n    pass\n",
                        test_c=left_out)
    # `-m` deselects four tests, as make test's steps do: the lanes must be cut from what is left.
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "worksteal", "-v", "-p", "no:cacheprovider",
                                           "-m", "not serial")
    assert result.ret == 0
    first: dict[str, str] = {}
    for line in result.outlines:
        words = line.split()
        if len(words) >= 2 and words[0].startswith("[gw") and "PASSED" in words:
            first.setdefault(words[0], words[-1])
    assert sorted(first.values()) == ["test_a.py::test_slow_a", "test_b.py::test_slow_b"], result.outlines[-30:]
