"""`--killtest-resume FILE`: a campaign's verdicts kept in a file, so a rerun runs only the points that have none.

pytest-xdist replaces a crashed worker by starting another on the same machine; when the machine itself is
gone (its sshd killed, the host down), the replacement cannot connect and the session ends, leaving the
points that were queued for it without a verdict. With this option every item's verdict is appended to
FILE as it arrives (one JSON line, flushed and fsynced, written by the controller only: the workers may be
on other machines), and a session started with the same FILE deselects every item that already has one.
Run the same command again, on the machines that are left, until every point has a verdict.

- A verdict is the outcome of an item's call (passed, failed, skipped), or a skip at setup. An item whose
  worker crashed under it (xdist's report `when="???"`) or whose setup errored has none: it runs again.
- Under xdist the workers deselect too, by the ids the controller read from FILE at its start and sent
  them (workerinput), so every worker collects the same items, and remote workers need no copy of FILE.
- The session fails when a verdict kept from an earlier session failed, so the last rerun's exit status
  is the campaign's.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

KEY = "killtest_resume_done"  # workerinput key: the ids that already have a verdict


class Resume:
    """The plugin object registered by killtest.pytest_plugin when --killtest-resume names a file."""

    def __init__(self, config: pytest.Config, path: str) -> None:
        self.config, self.path = config, os.path.abspath(path)
        worker: dict[str, Any] | None = getattr(config, "workerinput", None)
        self.controller = worker is None
        self.kept: dict[str, str] = read_verdicts(self.path) if worker is None else dict(worker.get(KEY, {}))
        self.deselected = 0

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:  # xdist's controller, before a worker starts
        node.workerinput[KEY] = self.kept

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        done = [item for item in items if item.nodeid in self.kept]
        if done:
            config.hook.pytest_deselected(items=done)
            items[:] = [item for item in items if item.nodeid not in self.kept]
            self.deselected = len(done)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.controller or not is_verdict(report):
            return
        self.kept[report.nodeid] = report.outcome
        gateway = getattr(getattr(report, "node", None), "gateway", None)  # xdist's worker, on the controller
        line = json.dumps({"nodeid": report.nodeid, "outcome": report.outcome,
                           "worker": getattr(gateway, "id", None)})
        with open(self.path, "a", encoding="utf-8") as out:  # one short line per append: whole lines only
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())

    def pytest_report_header(self, config: pytest.Config) -> str:
        return f"killtest resume: {len(self.kept)} verdicts kept in {self.path}; items that have one are deselected"

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        earlier = [nodeid for nodeid, outcome in self.kept.items() if outcome == "failed"]
        if self.controller and earlier and session.exitstatus in (pytest.ExitCode.OK,
                                                                   pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.controller:
            return
        failed = sorted(n for n, outcome in self.kept.items() if outcome == "failed")
        terminalreporter.write_line(f"killtest resume: {len(self.kept)} verdicts in {self.path},"
                                    f" {len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""))


def is_verdict(report: pytest.TestReport) -> bool:
    """A report that decides its item: the call's outcome, or a skip at setup (not xdist's crash report)."""
    return report.when == "call" or (report.when == "setup" and report.skipped)


def read_verdicts(path: str) -> dict[str, str]:
    """nodeid -> outcome from FILE (none yet: empty); a torn last line, from a killed controller, is skipped."""
    kept: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as source:
            for line in source:
                try:
                    entry = json.loads(line)
                    kept[str(entry["nodeid"])] = str(entry["outcome"])
                except (ValueError, KeyError, TypeError):
                    continue
    except FileNotFoundError:
        pass
    except OSError as error:
        raise pytest.UsageError(f"--killtest-resume {path}: cannot read it: {error.strerror}") from None
    return kept
