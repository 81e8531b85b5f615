"""Findings are an Enum whose members carry their code, their promise and their one-line description."""

import json
import os
import subprocess
import sys

import pytest

from killtest.harness.check.findings import FINDINGS, Finding, Promise

# The codes saved result files, baselines and the bug zoo's `expect` keys hold, in their historical order.
SAVED_CODES = [
    "liveness", "crashed", "no_kill_landed", "lost", "wrong_value", "not_on_site", "unreadable", "extra_rows",
    "excess_requests", "refetched_after_commit", "fetched_twice_by_one_start", "rewrote_unchanged", "left_leases",
    "ignored_retry_after", "missed_change", "missing_files", "duplicate_files", "missing_webhooks",
    "duplicate_webhooks", "wrong_counter", "control_without_duplicates",
]


@pytest.mark.parametrize("finding", list(Finding), ids=lambda f: f.value)
def test_every_finding_has_a_one_line_description_and_a_promise(finding):
    assert finding.description.strip() and "\n" not in finding.description
    assert isinstance(finding.promise, Promise)


def test_finding_codes_are_unique():
    codes = [finding.value for finding in Finding]
    assert len(codes) == len(set(codes))


def test_a_finding_is_found_by_its_code_and_its_code_is_its_value():
    assert Finding("lost") is Finding.LOST and Finding.LOST.value == "lost"
    assert Finding.LOST.description.startswith("a product on the site was missing from the store after a crawl that"
                                               " finished, or after a start that crashed")


def test_saved_codes_keep_their_names_and_order_because_baselines_compare_by_them():
    assert list(FINDINGS)[:len(SAVED_CODES)] == SAVED_CODES


def test_the_findings_table_is_derived_from_the_enum():
    assert FINDINGS == {finding.value: finding.description for finding in Finding}


def test_every_promise_has_a_finding():
    assert {finding.promise for finding in Finding} == set(Promise)


def test_a_crashed_node_start_is_named_by_its_error_not_by_nodes_closing_version_line():
    from killtest.harness.check.complaint import complaint

    node = ["/tmp/s.js:4", "SyntaxError: Unterminated string in JSON at position 36", "    at JSON.parse (<anonymous>)",
            "", "Node.js v20.20.2"]
    assert complaint(node) == "SyntaxError: Unterminated string in JSON at position 36"
    assert complaint(["Traceback (most recent call last):", "ValueError: no"]) == "ValueError: no"
    assert complaint(["Node.js v20.20.2"]) == "Node.js v20.20.2"  # nothing else to name


def test_a_stderr_tail_keeps_the_error_line_a_node_stack_pushed_above_it(tmp_path):
    from killtest.harness.check.complaint import complaint
    from killtest.harness.running.collect import stderr_tail

    stderr = tmp_path / "err"
    stderr.write_text("/x.js:4\nSyntaxError: Unterminated string in JSON at position 36\n"
                      + "".join(f"    at frame{n} (node:internal/x:{n}:1)\n" for n in range(12))
                      + "\nNode.js v20.20.2\n")
    tail = stderr_tail(str(stderr))
    assert tail[0] == "SyntaxError: Unterminated string in JSON at position 36"
    assert complaint(tail) == "SyntaxError: Unterminated string in JSON at position 36"
    assert complaint(["    at node:internal/main/run_main_module:28:49", "", "Node.js v20.20.2"]) == \
        "at node:internal/main/run_main_module:28:49"


def test_a_tail_that_ends_inside_a_stack_is_named_by_the_error_above_it():
    from killtest.harness.check.complaint import complaint

    crawlee = ["SyntaxError: Unexpected end of JSON input", "    at JSON.parse (<anonymous>)",
               "    at async AutoscaledPool._maybeRunTask (/x/autoscaled_pool.js:481:27)"]
    assert complaint(crawlee) == "SyntaxError: Unexpected end of JSON input"
    assert complaint(["    at async main (/x.cjs:1:1)"]) == "at async main (/x.cjs:1:1)"  # nothing else to name
    assert complaint(["ValueError: x", "fell back at once"]) == "fell back at once"  # not a frame: the last line


def test_a_tail_that_ends_with_the_errors_properties_is_named_by_the_error():
    """`console.error(err)` of an Error with properties: the stack's last frame opens ` {`, the
    properties follow and `}` closes them; stderr_tail puts the error line above properties that pushed
    the frame out of the tail."""
    from killtest.harness.check.complaint import complaint

    assert complaint(["Error: boom", "    at main (/x.cjs:1:1) {", "  code: 'E_X'", "}"]) == "Error: boom"
    assert complaint(["Error: boom", "    at f (/x.cjs:1:1)", "    at main (/x.cjs:2:1) {", "  code: 'E_X'", "}",
                       "", "Node.js v20.20.2"]) == "Error: boom"  # thrown, not caught
    assert complaint(["Error: ENOENT: no such file", "  errno: -2,", "  code: 'ENOENT',", "  syscall: 'open',",
                       "  path: '/x'", "}"]) == "Error: ENOENT: no such file"
    assert complaint(["ValueError: x", "{", '  "a": 1', "}"]) == "}"  # not an error's properties: the last line


@pytest.mark.parametrize(("mode", "status", "says"), [
    ("", 1, "start 2 exited by itself with status 1: `SyntaxError: Unexpected end of JSON input`"),  # the finding
    ("--at-once", 2, "exited with status 1 before its first request: SyntaxError: Unexpected end of JSON input"),
    # The error carries properties: Node.js prints them after the stack, up to a closing `}`.
    ("--props", 1, "start 2 exited by itself with status 1: `SyntaxError: Unexpected end of JSON input`"),
    ("--at-once --props", 2, "before its first request: SyntaxError: Unexpected end of JSON input"),
])
@pytest.mark.slow
def test_a_node_start_that_prints_its_error_and_stack_then_exits_is_named_by_the_error(tmp_path, mode, status, says):
    """Real processes: the stack's last frame is not what killtest quotes, in the crash finding (a restart
    crashes) nor in the one line of a design that crashes before its first request (runner.py)."""
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scraper_fixtures", "node_crash_stack.cjs")
    spec = tmp_path / "design.toml"
    command = json.dumps(["node", fixture, "{base_url}", "{work_dir}", *mode.split()])
    spec.write_text(f'[design]\nname = "node-crash-stack"\ncommand = {command}\n\n[store]\nkind = "jsonl"\n'
                    'path = "{work_dir}/records.jsonl"\nkey = "sku"\nfields = ["price", "name"]\n')
    done = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", str(spec), "--runs", "1",
                           "--schedule", "r1", "--listing-pages", "1", "--per-page", "2", "--time-limit", "60",
                           "--no-plot", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert done.returncode == status, done.stderr[-2000:]
    assert says in done.stderr
    assert "at async" not in done.stderr and "at main" not in done.stderr and ": }" not in done.stderr
