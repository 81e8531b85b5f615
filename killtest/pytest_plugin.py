"""killtest's pytest plugin: kill-test a scraper from your own test suite (docs/how-to/pytest.md).

Registered by the `pytest11` entry point `killtest`, so pytest loads it in every session of an
environment where killtest is installed. It follows pytest-postgresql's, pytest-redis's and
Hypothesis's plugins:

- an option group `killtest` in `pytest --help`: `--killtest-seed`, `--killtest-examples`,
  `--killtest-max-seconds`, `--killtest-out`, `--killtest-database`, `--killtest-resume`, each with an
  ini key of the same name (`killtest_seed = 3` under `[pytest]`);
- fixtures: `killtest_site` (session-scoped: the fixture shop on 127.0.0.1, port 0) and `killtest`
  (per test: `.run(spec)`, `.explore(spec)`, `.fuzz(spec)`, each returning a killtest.api.Result);
- the marker `@pytest.mark.killtest(promises=[...])` or `(does_not_promise=[...])`: what the design
  promises, which its spec must say too;
- on a failed test that used `killtest`, a report section "killtest" with every verdict: for an explore or
  a fuzz its distinct failures, one per bug at the program's own line with its text and replay line; for a
  run its findings and the `killtest replay ...` line of the first failure; the seed in the report header;
- a `KilltestNotTested` warning for a run whose every killed start died before storing a record (its PASS holds for
  that crash state only: harness/check/kill_phases.py), in pytest's warnings summary.

Importing this module imports nothing of the harness (that would load Flask into every pytest
session): the fixtures import killtest.api when a test first asks for them, and a test that uses
none of them runs exactly as it would without killtest.
"""

from __future__ import annotations

import json
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from killtest.api import Result

# harness/defaults.py's SEED, written out here because importing harness/defaults.py loads Flask, and
# the report header is printed in every session; tests/test_pytest_plugin.py holds the two equal.
DEFAULT_SEED = 1
RESULTS = pytest.StashKey[list]()  # the Results of the test's killtest calls, for its report section


class KilltestNotTested(UserWarning):
    """A kill test passed, but every start its kills ended had died before storing a record: what that PASS could
    not have found is in the message, and pytest's warnings summary shows it (`-W error::...` makes it fail)."""

# name (flag --killtest-NAME, ini killtest_NAME) -> (type, metavar, help)
OPTIONS: dict[str, tuple[Callable[[str], Any], str, str]] = {
    "seed": (int, "N", f"seed of run 1 of a kill test (run r uses N + r - 1) and of a fuzz's search (default"
                       f" {DEFAULT_SEED}); the same seed kills at the same moments"),
    "examples": (int, "N", "kill schedules a fuzz tries (default: killtest fuzz's)"),
    "max-seconds": (float, "SECONDS", "stop a fuzz's search after this long (default: no limit)"),
    "out": (str, "DIR", "keep each test's result files in DIR/<test>/ (default: under pytest's temporary"
                        " directory, which keeps the last three sessions)"),
    "database": (str, "DIR", "where a fuzz keeps the failures it finds and replays them first next time, shared"
                             " by every test and xdist worker (default: OUT/fuzz-database with --killtest-out,"
                             " else pytest's cache, .pytest_cache/d/killtest-fuzz-database)"),
    "resume": (str, "FILE", "keep every item's verdict in FILE and deselect the items that already have one:"
                            " rerun a campaign a crashed host cut short (killtest/pytest_resume.py)"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("killtest", "killtest: SIGKILL scrapers for real and count what they stored")
    for name, (kind, metavar, text) in OPTIONS.items():
        dest = "killtest_" + name.replace("-", "_")
        group.addoption(f"--killtest-{name}", dest=dest, type=kind, default=None, metavar=metavar, help=text)
        parser.addini(dest, f"{text} (--killtest-{name})", default=None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "killtest(promises=None, does_not_promise=None): the promises the design"
                                       " under test makes (or waives), by name; the killtest fixture fails the"
                                       " test when the design's spec says otherwise")
    resume = setting(config, "resume")
    if resume:
        from killtest.pytest_resume import Resume  # pytest and the standard library only

        config.pluginmanager.register(Resume(config, resume), "killtest-resume")


def pytest_report_header(config: pytest.Config) -> str:
    out, seed = setting(config, "out"), setting(config, "seed")
    return f"killtest: seed {DEFAULT_SEED if seed is None else seed}, results in " + (
        os.path.abspath(out) if out else "pytest's temporary directory")


def setting(config: pytest.Config, name: str) -> Any:
    """An option as given, else its ini key, else None; a bad ini value is a usage error."""
    dest = "killtest_" + name.replace("-", "_")
    value = config.getoption(dest)
    if value is not None:
        return value
    text = config.getini(dest)
    if text in (None, "", []):
        return None
    try:
        return OPTIONS[name][0](str(text).strip())
    except ValueError:
        raise pytest.UsageError(f"ini key {dest}: expected {OPTIONS[name][1]}, not {text!r}") from None


def fuzz_database(config: pytest.Config) -> str | None:
    """One failure database for the whole session and the next ones: each test's results go to a directory
    of its own, so the default of `killtest fuzz` (OUT/fuzz-database) would forget between sessions.
    None (fuzz's default) when the cache is off (`-p no:cacheprovider`) and no directory is named."""
    given, out = setting(config, "database"), setting(config, "out")
    if given or out:
        return os.path.abspath(given or os.path.join(out, "fuzz-database"))
    cache = getattr(config, "cache", None)
    return str(cache.mkdir("killtest-fuzz-database")) if cache is not None else None


@pytest.fixture(scope="session")
def killtest_site() -> Iterator[Any]:
    """The fixture shop on 127.0.0.1 and a free port, for the whole session: `.base_url`, and
    `.catalog.products` (each with `.sku`, `.name`, `.price` and `.path`), the ground truth it serves.
    A kill test does not use it: each run, explore or fuzz serves its own site."""
    from killtest.fixture_site.catalog import build_catalog
    from killtest.fixture_site.server import SiteServer

    with SiteServer(build_catalog()) as site:
        yield site


@pytest.fixture
def killtest(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Killtest:
    """Kill-test a design from this test: `killtest.run(spec, ...)`, `.explore(spec, ...)`, `.fuzz(spec, ...)`."""
    return Killtest(request.node, tmp_path_factory)


class Killtest:
    """The `killtest` fixture: killtest.api's run, explore and fuzz with the session's seed, examples and
    results directory, the test's marker checked against the spec, and every verdict kept for the report."""

    def __init__(self, node: pytest.Item, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._node = node
        self._tmp = tmp_path_factory
        self._base: str | None = None
        node.stash[RESULTS] = []

    @property
    def results(self) -> list[Result]:
        """Every result of this test so far, in order."""
        return self._node.stash[RESULTS]

    def run(self, design: Any, **options: Any) -> Result:
        """killtest.api.run on `design` (a spec path or built-in name), seeded by --killtest-seed."""
        return self._call("run", design, {"seed": setting(self._node.config, "seed"), **options})

    def explore(self, design: Any, **options: Any) -> Result:
        """killtest.api.explore on `design`: every crash point, or `only="r3,w5"`."""
        return self._call("explore", design, options)

    def fuzz(self, design: Any, **options: Any) -> Result:
        """killtest.api.fuzz on `design`, with --killtest-seed, --killtest-examples and --killtest-max-seconds."""
        config = self._node.config
        given = {"seed": setting(config, "seed"), "examples": setting(config, "examples"),
                 "max_seconds": setting(config, "max-seconds"), "database": fuzz_database(config)}
        return self._call("fuzz", design, {**given, **options})

    def _call(self, command: str, design: Any, options: dict[str, Any]) -> Result:
        __tracebackhide__ = True
        from killtest import api

        options = {dest: value for dest, value in options.items() if value is not None}
        options.setdefault("out", self._out(command))
        try:
            found = [api.load_design(d) for d in (design if isinstance(design, (list, tuple)) else [design])]
        except api.KilltestError as error:
            mistake = str(error)
        else:
            for each in found:  # run takes several designs: each states the marker's promises
                check_marker(self._node, each)
            try:
                result: Result = getattr(api, command)(design, log=sys.stderr, **options)
            except api.KilltestError as error:
                mistake = str(error)
            else:
                self.results.append(result)
                for name, gap in result.not_tested.items():  # a PASS never hides what its kills did not reach
                    warnings.warn(KilltestNotTested(f"killtest {command} {name}: NOT TESTED: {gap}"), stacklevel=2)
                return result
        pytest.fail(f"killtest: {mistake}", pytrace=False)  # bad input: one line, no traceback

    def _out(self, command: str) -> str:
        """A fresh directory per call: DIR/<test>/<n>-<command> with --killtest-out, else under pytest's tmp."""
        if self._base is None:
            name = re.sub(r"[^\w.-]+", "_", self._node.nodeid)[-80:]
            root = setting(self._node.config, "out")
            self._base = os.path.join(os.path.abspath(root), name) if root \
                else str(self._tmp.mktemp(f"killtest-{name[-30:]}"))
        return os.path.join(self._base, f"{len(self.results) + 1}-{command}")


def check_marker(node: pytest.Item, design: Any) -> None:
    """Fail the test, in one line, when its killtest marker and the design's spec disagree on what it promises."""
    __tracebackhide__ = True
    from killtest.harness.promises import NOT_WAIVABLE, WAIVABLE, waivable_names

    marker = node.get_closest_marker("killtest")
    if marker is None:
        return
    unknown_keys = set(marker.kwargs) - {"promises", "does_not_promise"}
    if marker.args or unknown_keys or len(marker.kwargs) != 1:
        pytest.fail("@pytest.mark.killtest takes one keyword: promises=[...] or does_not_promise=[...]", pytrace=False)
    key, names = next(iter(marker.kwargs.items()))
    names = [names] if isinstance(names, str) else list(names)
    known = {p.value for p in WAIVABLE} | ({p.value for p in NOT_WAIVABLE} if key == "promises" else set())
    wrong = [n for n in names if n not in known]
    if wrong:
        pytest.fail(f"@pytest.mark.killtest({key}=...): {', '.join(map(repr, wrong))} is not a promise a spec can"
                    f" waive; they are {', '.join(waivable_names())}", pytrace=False)
    stated = set(names) if key == "does_not_promise" else {p.value for p in WAIVABLE} - set(names)
    waived = {p.value for p in design.does_not_promise}
    if stated != waived:
        said = sorted(waived) or "nothing"
        pytest.fail(f"{design.spec_file or design.name}: the spec waives {said}, but this test's"
                    f" @pytest.mark.killtest({key}=...) says it waives {sorted(stated) or 'nothing'}:"
                    " make them agree", pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A failed test that kill-tested something gets a section "killtest": each verdict, its findings
    and the line that replays the first failure (Hypothesis adds its own section the same way)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    results = item.stash.get(RESULTS, None)
    if results and report.when == "call" and report.failed:
        report.sections.append(("killtest", "\n\n".join(_section(result) for result in results)))


def _section(result) -> str:
    """A result's report; for an explore or a fuzz, its distinct failures (from its .json, as the terminal shows
    them: one per bug, at the program's own line with its text) instead of every broken point's findings."""
    failures = result.data.get("failures") if isinstance(result.data.get("failures"), list) else None
    if failures is None:
        found = next((path for path in result.files if path.endswith(".json")), None)
        try:
            with open(found or "", encoding="utf-8") as saved:
                failures = json.load(saved).get("failures")
        except (OSError, ValueError):
            failures = None
    if not failures:
        return result.report()
    lines = [result.summary, f"{len(failures)} distinct failure{'s' if len(failures) != 1 else ''}:"]
    for number, failure in enumerate(failures, 1):
        title = "; ".join(failure.get("problems", [])) or ", ".join(failure.get("findings", []))
        line = failure.get("line") or ""
        at = {each.rpartition(":")[2] for each in failure.get("lines") or [line]}  # one logical write: its lines
        named = failure.get("place") if len(at) > 1 else line
        lines += [f"failure {number}: {f'at {named}' if line else failure.get('place')}: {title}",
                  f"  {failure.get('count')} covered: {failure.get('points')}",
                  f"  {failure.get('example')}: {failure.get('where')}",
                  *(f"    {'>' if str(n) in at else ' '} {n} | {text}" for n, text in failure.get("source", [])),
                  f"  replay: {failure.get('replay')}"]
    lines.append(f"results: {result.results_dir}")
    return "\n".join(lines)
