"""The layout is the architecture: rooms, their import rule, and modules a person can read.

docs/architecture.md states the rule these tests hold: each room of harness/ imports only the rooms
below it, so a checker can be read without the runner and a report without the processes.
"""

from __future__ import annotations

import ast
import os
from collections import Counter

import pytest

HARNESS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "harness")
FLOOR = {"errors", "files", "history", "published", "defaults", "options", "option_kinds", "promises", "lifeline"}
FLOOR |= {"cgroups"}  # each start in a cgroup of its own (issue 23: a detached browser)
# pinned envs built once (issue 36): cases, the proxy, designs' packages; their builders' turns (env_builds)
FLOOR |= {"tool_envs", "env_contents", "env_builds", "env_patches", "env_installs"}
# room -> the rooms (and floor) its modules may import; fixture_site is outside harness and is data.
MAY_IMPORT = {
    "floor": set(),
    "design": {"floor"},
    "check": {"floor"},
    "faults": {"floor", "design", "check"},
    "servers": {"floor", "design"},
    "report": {"floor", "check", "design"},
    "running": {"floor", "design", "check", "faults", "report", "servers"},
    "campaigns": {"floor", "design", "check", "faults", "report", "servers", "running"},
    "bench": {"floor", "design", "check", "faults", "report", "servers", "running", "campaigns"},
    "cli": {"floor", "design", "check", "faults", "report", "servers", "running", "campaigns", "bench"},
}
LONGEST_MODULE = 320  # lines; "a few hundred lines at most" (STYLE.md), with a little slack


def _modules() -> list[tuple[str, str]]:
    """(room, path) of every module under harness/."""
    found = []
    for folder, _, files in os.walk(HARNESS):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                parts = os.path.relpath(path, HARNESS).split(os.sep)
                room = "floor" if len(parts) == 1 else parts[0]
                found.append((room, path))
    return sorted(found)


def _room_of_import(module: str) -> str | None:
    """The room a `killtest.harness.x.y` import lands in; None for anything outside harness."""
    parts = module.split(".")
    if parts[:2] != ["killtest", "harness"] or len(parts) == 2:
        return None
    parts = parts[1:]
    return "floor" if parts[1] in FLOOR or parts[1] in ("__main__",) else parts[1]


def _imports(path: str) -> list[str]:
    tree = ast.parse(open(path, encoding="utf-8").read())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def test_the_import_rule_sees_the_imports():
    """The rule above reads real imports: a renamed package must not make it pass by seeing none."""
    seen = Counter(_room_of_import(module) for _, path in _modules() for module in _imports(path))
    assert seen["floor"] > 20 and seen["check"] > 10 and seen["running"] > 10 and seen["campaigns"] > 10, seen


def test_no_module_imports_the_old_top_level_names():
    """Installed, the tree is killtest.harness, killtest.scrapers, killtest.fixture_site; a bare `harness`
    import would find a user's own package of that name, or nothing."""
    root = os.path.dirname(HARNESS)
    wrong = []
    for top in ("harness", "fixture_site", "scrapers", "tests", "examples", "killtest"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    wrong += [f"{os.path.relpath(path, root)}: {module}" for module in _imports(path)
                              if module.split(".")[0] in ("harness", "fixture_site", "scrapers")]
    assert wrong == []


def test_the_wheel_lists_every_package():
    """pyproject.toml names each package by hand (the tree installs under killtest.); a folder it forgets
    would be missing from the wheel and fail only for users."""
    text = open(os.path.join(os.path.dirname(HARNESS), "pyproject.toml"), encoding="utf-8").read()
    root = os.path.dirname(HARNESS)
    for top in ("harness", "fixture_site", "scrapers"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            if "__init__.py" in files:
                package = "killtest." + os.path.relpath(folder, root).replace(os.sep, ".")
                assert f'"{package}"' in text, f"{package} is not in pyproject.toml's packages"


def test_every_module_sits_in_a_known_room():
    rooms = {room for room, _ in _modules()}
    assert rooms <= set(MAY_IMPORT), f"rooms without an import rule: {rooms - set(MAY_IMPORT)}"


@pytest.mark.parametrize("room,path", _modules(), ids=lambda value: os.path.relpath(value, HARNESS)
                         if isinstance(value, str) and value.startswith("/") else value)
def test_imports_run_one_way(room, path):
    if os.path.basename(path) == "__main__.py":
        return  # `python -m harness` is the command line by another name
    wrong = []
    for module in _imports(path):
        target = _room_of_import(module)
        if target is not None and target != room and target not in MAY_IMPORT[room]:
            wrong.append(module)
    assert not wrong, f"{os.path.relpath(path, HARNESS)} ({room}) imports {wrong}; {room} may import only" \
                      f" {sorted(MAY_IMPORT[room]) or 'nothing from the rooms'} (docs/architecture.md)"


def test_no_two_modules_share_a_name():
    names = Counter(os.path.basename(path) for _, path in _modules() if not path.endswith("__init__.py"))
    assert [name for name, count in names.items() if count > 1] == []


def test_no_module_is_too_long_to_read():
    long = {os.path.relpath(path, HARNESS): n for _, path in _modules()
            if (n := sum(1 for _ in open(path, encoding="utf-8"))) > LONGEST_MODULE}
    assert long == {}


def test_every_module_says_what_it_holds():
    silent = [os.path.relpath(path, HARNESS) for _, path in _modules()
              if os.path.basename(path) != "__main__.py"
              and not ast.get_docstring(ast.parse(open(path, encoding="utf-8").read()))]
    assert silent == []


def test_the_checker_does_no_io():
    """check/ is pure: Flask's sansio rule. No file, socket, process or clock of its own."""
    forbidden = {"os", "subprocess", "socket", "sqlite3", "shutil", "tempfile", "psycopg", "redis", "requests",
                 "time", "threading"}
    for room, path in _modules():
        if room == "check":
            used = {module.split(".")[0] for module in _imports(path)} & forbidden
            assert not used, f"{os.path.relpath(path, HARNESS)} imports {sorted(used)}"


def test_the_public_api_sits_above_every_room():
    """killtest/ (the API and the pytest plugin) may import any room; no room imports it back, and its modules
    say what they hold and stay short, as the rooms' do."""
    root = os.path.dirname(HARNESS)
    above = {name[:-3] for name in os.listdir(os.path.join(root, "killtest")) if name.endswith(".py")}
    upward = []
    for top in ("harness", "fixture_site", "scrapers"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in (n for n in files if n.endswith(".py")):
                path = os.path.join(folder, name)
                upward += [f"{os.path.relpath(path, root)}: {module}" for module in _imports(path)
                           if module == "killtest" or module.split(".")[:2] in (["killtest", m] for m in above)]
    assert upward == []
    for name in above - {"__main__"}:
        path = os.path.join(root, "killtest", f"{name}.py")
        assert ast.get_docstring(ast.parse(open(path, encoding="utf-8").read())), f"killtest/{name}.py says nothing"
        assert sum(1 for _ in open(path, encoding="utf-8")) <= LONGEST_MODULE, f"killtest/{name}.py is too long"


def _fast_lane_faults() -> dict[str, list[str]]:
    """kind -> the tests marked `@pytest.mark.fault(kind)` that make check runs (marked neither slow, serial nor
    hosts, on the function or the module)."""
    tests = os.path.join(os.path.dirname(HARNESS), "tests")
    found: dict[str, list[str]] = {}
    for name in sorted(os.listdir(tests)):
        if not (name.startswith("test_") and name.endswith(".py")):
            continue
        tree = ast.parse(open(os.path.join(tests, name), encoding="utf-8").read())
        module_marks = {ast.unparse(node.value) for node in tree.body if isinstance(node, ast.Assign)
                        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)}
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            marks = [ast.unparse(d) for d in node.decorator_list] + sorted(module_marks)
            if any(f"pytest.mark.{tier}" in mark for mark in marks for tier in ("slow", "serial", "hosts")):
                continue
            for decorator in node.decorator_list:
                if (isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "pytest.mark.fault"
                        and decorator.args and isinstance(decorator.args[0], ast.Constant)):
                    found.setdefault(str(decorator.args[0].value), []).append(f"{name}::{node.name}")
    return found


def test_the_fast_lane_kills_once_with_every_kind_of_fault():
    """make check (the tests not marked slow, serial or hosts) holds one end-to-end kill test per kill-point kind
    and one for the network toxics: a new kind lands with its fast test (docs/reference/tests.md)."""
    from killtest.harness.faults.points import kinds

    wanted = {kind.PREFIX for kind in kinds()} | {"toxics"}
    found = _fast_lane_faults()
    assert sorted(wanted - set(found)) == [], f"kinds with no fast end-to-end test: {sorted(wanted - set(found))}"
    assert sorted(set(found) - wanted) == [], "a fault mark names no kind of fault"
