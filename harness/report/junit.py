"""JUnit XML for CI: one test case per run, crash point, fuzzed schedule or zoo design.

The format is the one CI servers read (Jenkins' and GitLab's JUnit reports, GitHub actions that
publish test results, pytest's own --junitxml): a <testsuites> holding one <testsuite> with the
counts, a <testcase> per case, a <failure> with a one-line message and the details (findings, the
replay line) as its text, and <skipped> for a case that proved nothing. ElementTree escapes the text.
"""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime, timezone

from killtest.harness.files import write_atomically


@dataclass(frozen=True)
class Case:
    """One test case: `failure` is its one-line message when it failed, `skipped` when it proved nothing."""

    classname: str  # e.g. killtest.explore.idempotent
    name: str  # e.g. the crash point w5, or "run 3"
    time_s: float = 0.0
    failure: str | None = None
    details: str = ""  # the failure's text: findings, one a line, and the replay line
    skipped: str | None = None


def junit_xml(suite: str, cases: list[Case], properties: dict[str, str] | None = None,
              time_s: float | None = None) -> str:
    """The document, with the suite's counts computed from `cases`."""
    root = ET.Element("testsuites", name="killtest")
    failures = sum(1 for c in cases if c.failure is not None)
    skipped = sum(1 for c in cases if c.failure is None and c.skipped is not None)
    total_s = time_s if time_s is not None else sum(c.time_s for c in cases)
    element = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)), failures=str(failures),
                            errors="0", skipped=str(skipped), time=f"{total_s:.3f}",
                            timestamp=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"),
                            hostname=socket.gethostname())
    root.set("tests", str(len(cases)))
    root.set("failures", str(failures))
    if properties:
        holder = ET.SubElement(element, "properties")
        for key, value in properties.items():
            ET.SubElement(holder, "property", name=key, value=value)
    for case in cases:
        item = ET.SubElement(element, "testcase", classname=case.classname, name=case.name, time=f"{case.time_s:.3f}")
        if case.failure is not None:
            failure = ET.SubElement(item, "failure", message=case.failure, type="killtest")
            failure.text = case.details or case.failure
        elif case.skipped is not None:
            ET.SubElement(item, "skipped", message=case.skipped)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: str, suite: str, cases: list[Case], properties: dict[str, str] | None = None,
                time_s: float | None = None) -> None:
    """Write the document whole (a reader never sees half of it)."""
    write_atomically(path, junit_xml(suite, cases, properties, time_s))
