"""One failure per bug, at the user's own line (issue 35): broken points grouped by the promises they broke and
the program's line where it is known, the write inside it kept as detail; the line's text shown from the
program's file; a framework's frame of the write named beside the user's own. Hand-made points and stack dumps:
check/distinct.py is pure, and the dumps are what py-spy and node_stack.py print.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from killtest.harness.campaigns.locate import frames_located, innermost, innermost_js, js_located, py_spy
from killtest.harness.check.distinct import Broken, group_failures
from killtest.harness.faults.points.line import shown_path
from killtest.harness.report.triage import failure_lines, places_line, source_excerpt
from killtest.harness.report.triage_page import failure_view, triage_page
from killtest.harness.report.triage_svg import lanes_drawn, timeline_svg

EXTRA = ("extra_rows",), ("7 rows for 6 products (broke no_duplicates)",)
SQLITE_COMMIT = ("before the write to progress.sqlite-journal", "before the fdatasync of progress.sqlite-journal",
                 "before the pwrite64 to progress.sqlite", "before the fdatasync of progress.sqlite",
                 "before the unlink of progress.sqlite-journal", "before the fdatasync of the work dir")


def test_a_kill_anywhere_inside_one_commit_is_one_failure_at_its_line():
    """Six system calls of SQLite's one commit, each a kind of place: one failure at the line that commits, the
    six kinds listed inside it with their points."""
    broken = [Broken(f"w{10 + i}", *EXTRA, place=place, order=i, line="/home/me/scraper.py:37")
              for i, place in enumerate(SQLITE_COMMIT)]
    broken += [Broken(f"w{20 + i}", *EXTRA, place=place, order=10 + i, line="/home/me/scraper.py:37")
               for i, place in enumerate(SQLITE_COMMIT)]
    [failure] = group_failures(broken)
    assert failure.line == "/home/me/scraper.py:37" and len(failure.points) == 12
    assert failure.title == "at /home/me/scraper.py:37: 7 rows for 6 products (broke no_duplicates)"
    assert [(place, [b.point for b in points]) for place, points in failure.by_place()] == [
        (place, [f"w{10 + i}", f"w{20 + i}"]) for i, place in enumerate(SQLITE_COMMIT)]
    assert places_line(failure).startswith("by kind: before the write to progress.sqlite-journal (w10, w20); ")
    assert failure.to_json()["by_place"][0] == {"place": SQLITE_COMMIT[0], "count": 2, "points": "w10, w20"}


def test_two_mistakes_at_two_lines_that_break_the_same_promise_are_two_failures():
    """The same findings, at the same kind of place even: two lines are two bugs, never merged."""
    broken = [Broken("w3", *EXTRA, place="before the write to records.jsonl", order=0, line="/p/scraper.py:40"),
              Broken("w7", *EXTRA, place="before the write to records.jsonl", order=1, line="/p/scraper.py:52"),
              Broken("w9", *EXTRA, place="before the write to records.jsonl", order=2, line="/p/scraper.py:40")]
    failures = group_failures(broken)
    assert [(f.line, [b.point for b in f.points]) for f in failures] == [
        ("/p/scraper.py:40", ["w3", "w9"]), ("/p/scraper.py:52", ["w7"])]
    assert len({f.title for f in failures}) == 2


def test_different_findings_at_one_line_stay_apart_and_without_a_line_the_place_groups():
    lost = ("lost",), ("lost 1 of 6 records (broke no_lost_records)",)
    broken = [Broken("w1", *EXTRA, place="before the write to done.txt", order=0, line="/p/s.py:9"),
              Broken("w2", *lost, place="before the write to done.txt", order=1, line="/p/s.py:9"),
              Broken("r3", *lost, place="on a request for /product/N", order=2),
              Broken("r5", *lost, place="on a request for /product/N", order=3),
              Broken("w8", *lost, place="before the write to done.txt", order=4)]  # past the located kinds: no line
    failures = group_failures(broken)
    assert [(f.line, f.place, [b.point for b in f.points]) for f in failures] == [
        ("", "on a request for /product/N", ["r3", "r5"]), ("/p/s.py:9", "/p/s.py:9", ["w1"]),
        ("/p/s.py:9", "/p/s.py:9", ["w2"]), ("", "before the write to done.txt", ["w8"])]
    assert places_line(failures[1]) is None  # one kind of place: nothing to list


def test_the_terminal_and_the_page_show_the_lines_text_with_two_lines_around_it(tmp_path):
    program = tmp_path / "scraper.py"
    program.write_text(textwrap.dedent("""\
        import sqlite3


        def mark_done(db, path):
            db.execute("INSERT INTO done (path) VALUES (?)", (path,))
            db.commit()


        def main():
            pass
        """))
    line = f"{program}:6"
    assert source_excerpt(line) == [(4, "def mark_done(db, path):"),
                                    (5, '    db.execute("INSERT INTO done (path) VALUES (?)", (path,))'),
                                    (6, "    db.commit()"), (7, ""), (8, "")]
    assert source_excerpt(f"{program}:99") == [] and source_excerpt(f"{tmp_path}/gone.py:3") == []
    failures = group_failures([Broken("w12", *EXTRA, place=place, order=i, line=line)
                               for i, place in enumerate(SQLITE_COMMIT[:2])])
    lines = failure_lines(failures, lambda b: f"killtest replay --schedule {b.point}")
    assert "    > 6 |     db.commit()" in lines and "      4 | def mark_done(db, path):" in lines
    assert lines.index("    > 6 |     db.commit()") < lines.index("  replay: killtest replay --schedule w12")
    page = triage_page("t", [], [failure_view(failures[0], "killtest replay --schedule w12")], [], [])
    assert '<pre class="source">' in page and "<b>6 |     db.commit()</b>" in page
    assert "before the fdatasync of progress.sqlite-journal" in page  # the kinds inside it, listed


def test_a_torn_row_is_named_in_the_keys_table_not_denied():
    """'7 rows for 6 products' next to 'No key is lost, duplicated or wrong' contradicted itself: the torn row
    is the seventh, and the table says which."""
    torn = 'file 000007.json is not JSON (its sku reads SKU-000003): {"sku": "SKU-000003", "pr'
    failure = group_failures([Broken("w5", ("extra_rows", "unreadable"), ("7 rows for 6 products",), order=0)])[0]
    page = triage_page("t", [], [failure_view(failure, "r", keys={"lost": [], "duplicated": [], "unexpected": [],
                                                                    "unreadable": [torn]})], [], [])
    assert "No key is" not in page and "SKU-000003" in page and "unreadable (a torn row" in page


def test_a_lane_no_run_has_an_event_in_is_left_out_saying_why_once():
    timeline = {"end": 2.0, "events": [[0.0, "start", "start 1"], [0.5, "request", "/list/0 (200)"],
                                       [1.0, "kill", "SIGKILL at w5"]]}
    assert lanes_drawn([timeline]) == ("start", "request", "kill")
    svg = timeline_svg(timeline, "t", lanes_drawn([timeline]))
    assert "records stored" not in svg and "requests" in svg and "pauses" not in svg
    failures = group_failures([Broken(p, *EXTRA, order=i) for i, p in enumerate(("w5", "r9"))])
    page = html.unescape(triage_page("t", [], [failure_view(f, "r", timeline) for f in failures], [], []))
    assert page.count("leave out the lanes") == 1 and "records stored (no run's store gave" in page
    assert ">records stored<" not in page


def test_the_framework_frame_of_the_write_and_the_users_nearest_own_frame_are_both_named():
    """A Scrapy spider: the feed exporter in site-packages made the write, the user's pipeline called it; the
    failure is grouped by the user's frame."""
    dump = ("Thread 7 (idle): \"MainThread\"\n"
            "    flush (/usr/lib/python3.11/_pyio.py:12)\n"
            "    export_item (/venv/lib/python3.11/site-packages/scrapy/exporters.py:118)\n"
            "    process_item (/venv/lib/python3.11/site-packages/scrapy/extensions/feedexport.py:500)\n"
            "    process_item (/home/me/shop/pipelines.py:21)\n"
            "    _runCallbacks (/venv/lib/python3.11/site-packages/twisted/internet/defer.py:892)\n"
            "    main (/home/me/shop/run.py:9)\n")
    found = frames_located(dump)
    assert found.line == "/home/me/shop/pipelines.py:21"
    assert found.words == ("in export_item (/venv/lib/python3.11/site-packages/scrapy/exporters.py:118), the"
                           " framework's frame of the write, called from process_item (/home/me/shop/pipelines.py:21)")
    assert innermost(dump) == "process_item (/home/me/shop/pipelines.py:21)"
    reactor_only = "    export_item (/venv/lib/python3.11/site-packages/scrapy/exporters.py:118)\n"
    assert frames_located(reactor_only).words.endswith("no frame of the program's own on the stack")
    # Crawlee for Node.js: its storage client in node_modules, the user's handler below it.
    frames = ("JS:~writeFile node:internal/fs/promises:1:1\n"
              "JS:~setRecord /app/node_modules/@crawlee/memory-storage/index.js:40:5\n"
              "JS:~requestHandler /app/crawler.cjs:12:30\n")
    node = js_located(frames)
    assert node.line == "/app/crawler.cjs:12" and "memory-storage/index.js:40" in node.words
    assert innermost_js(frames) == "requestHandler (/app/crawler.cjs:12, the function's first line)"


RECORD_THEN_DONE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scraper_fixtures",
                                "record_file_then_done.py")
COMMIT_LINE, RECORD_LINES = (
    next(n for n, line in enumerate(open(RECORD_THEN_DONE, encoding="utf-8"), 1) if "INSERT INTO done" in line),
    {n for n, line in enumerate(open(RECORD_THEN_DONE, encoding="utf-8"), 1) if "out.flush()" in line or
     "with open(" in line or "out.write(" in line})


@pytest.mark.slow
@pytest.mark.skipif(py_spy() is None or shutil.which("strace") is None, reason="needs py-spy and strace")
def test_a_design_with_two_mistakes_gives_two_failures_its_commit_and_its_torn_file_at_both_its_lines(tmp_path):
    """Issue 35's design, outside the repository: its done mark is a SQLite commit after the record file, and the
    record file is written in place in two writes. Every store write explored: a kill anywhere inside the commit
    (the journal's write, its fdatasync, the database's pwrite64, ...) is one failure at the commit's line, the
    write kinds listed inside it. The torn file is written at two lines (the flush, and the `with` block's end that
    writes the rest), by two writes on one open file with nothing between them: one logical write, so one failure
    at both lines, each line's text shown. Two mistakes, two failures."""
    spec = tmp_path / "design.toml"
    command = json.dumps(["python3", RECORD_THEN_DONE, "--base", "{base_url}", "--out", "{store}"])
    spec.write_text(f'[design]\nname = "shop"\ndoes_not_promise = ["bounded_requests"]\ncommand = {command}\n\n'
                    '[store]\nkind = "json_files"\npath = "{work_dir}/dataset"\nkey = "sku"\n'
                    'fields = ["price", "name"]\n')
    out = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", str(spec), "--listing-pages", "1",
                           "--per-page", "1", "-j", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=900, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr[-2000:]
    found = json.loads((out / "explore-shop.json").read_text())
    failures = found["failures"]
    assert found["distinct_failures"] == len(failures) == 2, [(f["lines"], f["findings"]) for f in failures]
    program = shown_path(RECORD_THEN_DONE)  # in killtest's tree: named from its root, as a line point names it
    [commit] = [f for f in failures if f["findings"] == ["extra_rows"]]  # the commit's every point, in one failure
    assert commit["line"] == f"{program}:{COMMIT_LINE}" and commit["lines"] == [commit["line"]]
    assert len(commit["by_place"]) >= 3  # the commit's writes, inside it
    [torn] = [f for f in failures if f is not commit]
    assert "unreadable" in torn["findings"]
    torn_lines = {int(line.rpartition(":")[2]) for line in torn["lines"]}
    assert len(torn_lines) == 2 and torn_lines <= RECORD_LINES, torn["lines"]
    assert [n for n, _ in commit["source"]] == list(range(COMMIT_LINE - 2, COMMIT_LINE + 3))
    assert f"> {COMMIT_LINE} |     db.execute(\"INSERT INTO done" in done.stderr  # the line's text, in the terminal
    assert all(f"> {n} |" in done.stderr for n in torn_lines)  # both lines of the torn write, marked
    assert "2 distinct failures" in done.stderr
    page = (out / "explore-shop.html").read_text()
    assert all(f"<b>{n} |" in page for n in (*torn_lines, COMMIT_LINE))


def test_a_scrapy_write_from_the_reactor_is_named_by_the_frameworks_frame_of_the_held_thread():
    """What py-spy dumped of scrapy-jobdir held at an ftruncate of its request queue (Scrapy 2.19.0, in a virtual
    environment, whose lib/python3.11 holds site-packages): every frame is Scrapy's, Twisted's or Python's, and a
    pool thread is listed too. The held thread's framework frame is the line; no own frame is invented."""
    venv = "/work/wt/x/.venv/lib/python3.11/site-packages"
    dump = ("Thread 928 (idle): \"MainThread\"\n"
            f"    LifoDiskQueue.pop ({venv}/queuelib/queue.py:259)\n"
            f"    ScrapyPriorityQueue.pop ({venv}/scrapy/pqueues.py:198)\n"
            "    BaseEventLoop.run_forever (/usr/lib/python3.11/asyncio/base_events.py:607)\n"
            f"    <module> ({venv}/scrapy/__main__.py:5)\n"
            "    _run_code (<frozen runpy>:88)\n"
            "Thread 1566 (idle): \"PoolThread-twisted.internet.reactor-0\"\n"
            f"    ThreadWorker.__init__.<locals>.work ({venv}/twisted/_threads/_threadworker.py:75)\n"
            "\n# read in 0.1236 s\n# held thread 928\n")
    found = frames_located(dump)
    assert found.line == f"{venv}/queuelib/queue.py:259" and not found.own
    assert found.words == (f"in LifoDiskQueue.pop ({venv}/queuelib/queue.py:259), the framework's frame; no frame"
                           " of the program's own on the stack")


def test_fuzzed_schedules_whose_one_kill_landed_at_a_line_group_by_that_line():
    from killtest.harness.campaigns.fuzzing import Case, Trial
    from killtest.harness.report.triage import trial_failures

    def failed(schedule: str, line: str) -> Trial:
        return Trial(Case(2, 3, schedule), ["lost 1 of 6 records (broke no_lost_records)"], True,
                     {"findings": ["lost"], "where": "...", "place": f"at {schedule}", "line": line})

    failures = trial_failures([failed("l:s.py:9:1", "s.py:9"), failed("t0.2,l:s.py:9:2", "s.py:9"),
                               failed("l:s.py:14:1", "s.py:14")])
    assert [(f.line, [b.point for b in f.points]) for f in failures] == [
        ("s.py:9", ["l:s.py:9:1", "t0.2,l:s.py:9:2"]), ("s.py:14", ["l:s.py:14:1"])]


def test_a_torn_row_says_which_key_it_was_when_its_text_still_does():
    from killtest.harness.design.model import StoreSpec
    from killtest.harness.design.stores import record_from_json

    spec = StoreSpec(kind="json_files", path="{work_dir}/dataset", key="sku")
    torn = record_from_json(spec, "file 000007.json", '{"sku": "SKU-000003", "pr')
    assert torn.key is None and torn.unreadable == ('file 000007.json is not JSON (its sku reads SKU-000003):'
                                                    ' {"sku": "SKU-000003", "pr')
    assert record_from_json(spec, "file 000008.json", "").unreadable == "file 000008.json is not JSON: (empty)"


def _outcomes(kinds: list[tuple[str, str]]) -> list:
    """Broken points in order, each (point, kind of place), all with the same finding: hand-made outcomes."""
    from killtest.harness.campaigns.exploration import PointOutcome

    return [PointOutcome(point, True, False, list(EXTRA[1]), 7, 9, findings=list(EXTRA[0]), where=f"before {place}",
                         place=place) for point, place in kinds]


def test_a_kind_whose_first_and_last_located_points_disagree_gives_its_other_points_neither_line():
    """Two commits at two lines make the same calls on one journal: one (findings, place) kind, two bugs. Its first
    and last points are located at different lines: each keeps its own; the points between take neither line and
    stay grouped by their kind of place, so the second bug is never hidden inside the first's line."""
    from killtest.harness.campaigns.locate import with_locations
    from killtest.harness.report.triage import point_failures

    journal, db = "before the write to progress.sqlite-journal", "before the pwrite64 to progress.sqlite"
    outcomes = _outcomes([("w1", journal), ("w2", db), ("w5", journal), ("w6", db), ("w9", journal), ("w10", db)])
    found = {"w1": "in a (/p/s.py:30)", "w9": "in b (/p/s.py:41)", "w2": "in a (/p/s.py:30)",
             "w10": "in a (/p/s.py:30)"}
    with_locations(outcomes, found, {"w1": "/p/s.py:30", "w9": "/p/s.py:41", "w2": "/p/s.py:30",
                                     "w10": "/p/s.py:30"})
    assert [(o.point, o.line) for o in outcomes] == [("w1", "/p/s.py:30"), ("w2", "/p/s.py:30"), ("w5", ""),
                                                     ("w6", "/p/s.py:30"), ("w9", "/p/s.py:41"),
                                                     ("w10", "/p/s.py:30")]
    assert outcomes[0].where.endswith(", in a (/p/s.py:30)") and outcomes[4].where.endswith(", in b (/p/s.py:41)")
    assert outcomes[5].where == f"before {db}"  # the same line as its kind's first: said once
    failures = point_failures(outcomes)
    assert sorted((f.line, f.place, [b.point for b in f.points]) for f in failures) == [
        ("", journal, ["w5"]), ("/p/s.py:30", "/p/s.py:30", ["w1", "w2", "w6", "w10"]),
        ("/p/s.py:41", "/p/s.py:41", ["w9"])]


def test_a_kind_located_once_or_at_one_line_gives_that_line_to_all_its_points():
    from killtest.harness.campaigns.locate import with_locations

    journal = "before the write to progress.sqlite-journal"
    agreeing = _outcomes([("w1", journal), ("w5", journal), ("w9", journal)])
    with_locations(agreeing, {"w1": "in a (/p/s.py:30)", "w9": "in a (/p/s.py:30)"},
                   {"w1": "/p/s.py:30", "w9": "/p/s.py:30"})
    assert {o.line for o in agreeing} == {"/p/s.py:30"}
    alone = _outcomes([("w1", journal)])
    with_locations(alone, {"w1": "in a (/p/s.py:30)"}, {"w1": "/p/s.py:30"})
    assert alone[0].line == "/p/s.py:30"
    unlocatable = _outcomes([("w1", journal), ("w5", journal)])  # its first has words but no line: nothing to give
    with_locations(unlocatable, {"w1": "no source location: py-spy found no frame of the program"}, {})
    assert [o.line for o in unlocatable] == ["", ""]


TWO_COMMITS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scraper_fixtures",
                           "two_commits_one_promise.py")


@pytest.mark.slow
@pytest.mark.skipif(py_spy() is None or shutil.which("strace") is None, reason="needs py-spy and strace")
def test_two_commits_at_two_lines_that_break_the_same_promise_are_never_one_failure(tmp_path):
    """The reviewer's case, a design outside the repository: the first listing page's products and the others
    commit their done mark at two lines, each after the record file (the same mistake twice). Every kill inside
    either commit makes the same calls on the same journal and breaks no_duplicates the same way. Both lines are
    named, each by a failure of its own; no failure at one line holds the whole of both."""
    program = tmp_path / "scraper.py"
    shutil.copy(TWO_COMMITS, program)
    source = program.read_text().splitlines()
    first, second = (next(n for n, line in enumerate(source, 1) if mark in line)
                     for mark in ("FIRST COMMIT", "SECOND COMMIT"))
    spec = tmp_path / "design.toml"
    command = json.dumps(["python3", str(program), "--base", "{base_url}", "--out", "{store}"])
    spec.write_text(f'[design]\nname = "shop"\ndoes_not_promise = ["bounded_requests"]\ncommand = {command}\n\n'
                    '[store]\nkind = "json_files"\npath = "{work_dir}/dataset"\nkey = "sku"\n'
                    'fields = ["price", "name"]\n')
    out = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", str(spec), "--listing-pages", "2",
                           "--per-page", "1", "-j", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=900, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr[-2000:]
    found = json.loads((out / "explore-shop.json").read_text())
    failures = found["failures"]
    assert {tuple(f["findings"]) for f in failures} == {("extra_rows",)}  # one promise, broken one way
    lines = {f["line"].rpartition(":")[2] for f in failures if f["line"]}
    assert lines == {str(first), str(second)}, [(f["line"], f["place"], f["points"]) for f in failures]
    assert found["distinct_failures"] >= 2 and found["broken"] == sum(f["count"] for f in failures)
    assert f"> {second} |" in done.stderr and f"> {first} |" in done.stderr  # both lines' text, in the terminal
