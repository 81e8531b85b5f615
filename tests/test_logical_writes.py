"""One logical write torn apart by a kill is one failure at its lines (issue 35): a file written in place by a
buffered stream in two `write` calls (a flush, then the `with` block's end) was located at two lines, and a kill
before either piece is the same mistake. What the recording knows of each write decides it: two stream writes
(write, writev) by one thread on one open file (the same fd, not closed between), nothing between them (no
request, no sync, no other store call). Two commits, or two writes with anything between, stay two failures.
Hand-made strace logs (as `strace -f -yy` prints them) and hand-made broken points: both parts are pure.
"""

from __future__ import annotations

from killtest.harness.campaigns.point_words import logical_write
from killtest.harness.check.distinct import Broken, group_failures
from killtest.harness.faults.points.power_cut import PowerCutAtStoreWrite
from killtest.harness.faults.points.store_write import AtStoreWrite
from killtest.harness.faults.store_writes import parse_recording, recording_prefix
from killtest.harness.report.triage import excerpt_lines, failure_lines

VALUES = {"work_dir": "/tmp/run", "store": "/tmp/run/dataset"}
REQUEST = '100 sendto(5<TCP:[127.0.0.1:4000->127.0.0.1:8000]>, "GET /product/0 HTTP/1.1\\r\\n"..., 90, 0, NULL, 0) = 90'
TORN = f"""\
{REQUEST}
100 write(3</tmp/run/dataset/000001.json>, "{{\\"sku\\": \\"SKU-1\\", \\"p"..., 20) = 20
100 write(3</tmp/run/dataset/000001.json>, "rice\\": \\"9.99\\"}}", 40) = 40
100 close(3</tmp/run/dataset/000001.json>) = 0
100 pwrite64(4</tmp/run/progress.sqlite-journal>, "\\0\\0"..., 512, 0) = 512
100 fdatasync(4</tmp/run/progress.sqlite-journal>) = 0
100 pwrite64(6</tmp/run/progress.sqlite>, "\\0"..., 4096, 4096) = 4096
100 fdatasync(6</tmp/run/progress.sqlite>) = 0
100 unlink("/tmp/run/progress.sqlite-journal") = 0
"""


def test_two_writes_of_one_stream_with_nothing_between_are_one_logical_write():
    recording = parse_recording(TORN, VALUES)
    assert [(c.syscall, c.fd, c.goes_on) for c in recording.calls[:3]] == [
        ("write", 3, False), ("write", 3, True), ("pwrite64", 4, False)]
    assert recording.logical_write(1) == recording.logical_write(2) == (1, 2)
    assert [recording.logical_write(n) for n in range(3, 8)] == [(n, n) for n in range(3, 8)]  # the commit's own
    assert logical_write(AtStoreWrite(2), recording) == "w1-w2"
    assert logical_write(PowerCutAtStoreWrite(1), recording) == "xw1-xw2"
    assert logical_write(AtStoreWrite(3), recording) == ""  # a write of its own: nothing joins it
    assert "close" in ",".join(recording_prefix("/tmp/log"))  # the recording traces what ends an open file


def test_writes_with_anything_between_are_never_one_logical_write():
    """A close (the fd number reused by the next open), a sync, a request, another file's write, another thread,
    and positioned writes (SQLite's journal, a WAL's frames of two commits): each keeps the writes apart."""
    apart = {
        "closed and opened again": '100 close(3</tmp/run/dataset/000001.json>) = 0',
        "an fsync": "100 fsync(3</tmp/run/dataset/000001.json>) = 0",
        "a request": REQUEST,
        "another file's write": '100 write(4</tmp/run/dataset/000002.json>, "x", 1) = 1',
    }
    first = '100 write(3</tmp/run/dataset/000001.json>, "{\\"sku\\": \\"SKU-1\\", \\"p"..., 20) = 20'
    second = '100 write(3</tmp/run/dataset/000001.json>, "rice\\": \\"9.99\\"}", 40) = 40'
    for why, between in apart.items():
        recording = parse_recording("\n".join((first, between, second)), VALUES)
        writes = [n for n, c in enumerate(recording.calls, 1) if c.paths == ("dataset/000001.json",)
                  and c.syscall == "write"]
        assert [recording.logical_write(n) for n in writes] == [(n, n) for n in writes], why
    other_thread = parse_recording("\n".join((first, second.replace("100 ", "101 ", 1))), VALUES)
    assert other_thread.logical_write(2) == (2, 2)
    wal = parse_recording('100 pwrite64(7</tmp/run/progress.sqlite-wal>, "\\0"..., 24, 32) = 24\n'
                          '100 pwrite64(7</tmp/run/progress.sqlite-wal>, "\\0"..., 4096, 56) = 4096\n', VALUES)
    assert wal.logical_write(2) == (2, 2)  # two WAL frames may be two commits (synchronous=NORMAL syncs neither)
    unrelated_close = parse_recording("\n".join((first, '100 close(9</tmp/elsewhere.txt>) = 0', second)), VALUES)
    assert unrelated_close.logical_write(2) == (1, 2)  # another file's close ends nothing of this one


TORN_FILE = ("unreadable", "extra_rows"), ("1 stored rows could not be read (broke correct_values)",)
COMMIT = ("extra_rows",), ("7 rows for 6 products (broke no_duplicates)",)


def test_the_lines_of_one_logical_write_are_one_failure_and_a_piece_with_no_line_joins_them():
    at = "before the write to dataset/N.json"
    broken = [Broken("w11", *TORN_FILE, place=at, order=0, line="/p/s.py:33", write="w11-w12"),
              Broken("w12", *TORN_FILE, place=at, order=1, line="/p/s.py:31", write="w11-w12"),
              Broken("w32", *TORN_FILE, place=at, order=2, line="/p/s.py:33", write="w32-w33"),
              Broken("w33", *TORN_FILE, place=at, order=3, write="w32-w33"),  # not located: its write's lines
              Broken("w13", *COMMIT, place="before the pwrite64 to progress.sqlite-journal", order=4,
                     line="/p/s.py:38")]
    failures = group_failures(broken)
    assert [(f.lines, [b.point for b in f.points]) for f in failures] == [
        (("/p/s.py:31", "/p/s.py:33"), ["w11", "w12", "w32", "w33"]), (("/p/s.py:38",), ["w13"])]
    torn = failures[0]
    assert torn.line == "/p/s.py:31" and torn.place == "/p/s.py:31 and 33"
    assert torn.title == "at /p/s.py:31 and 33: 1 stored rows could not be read (broke correct_values)"
    assert torn.to_json()["lines"] == ["/p/s.py:31", "/p/s.py:33"]


def test_two_lines_no_logical_write_joins_stay_two_failures():
    """Two commits at two lines (a sync between: no logical write holds both), the same promise broken the same
    way: two failures. The pieces of one write with different findings stay apart too, and a piece that names no
    line of its write keeps its kind of place."""
    journal = "before the pwrite64 to progress.sqlite-journal"
    commits = [Broken("w13", *COMMIT, place=journal, order=0, line="/p/s.py:30"),
               Broken("w20", *COMMIT, place=journal, order=1, line="/p/s.py:43")]
    assert [f.lines for f in group_failures(commits)] == [("/p/s.py:30",), ("/p/s.py:43",)]
    at = "before the write to dataset/N.json"
    differ = [Broken("w11", *TORN_FILE, place=at, order=0, line="/p/s.py:33", write="w11-w12"),
              Broken("w12", *COMMIT, place=at, order=1, line="/p/s.py:31", write="w11-w12"),
              Broken("w40", *TORN_FILE, place=at, order=2, write="w40-w41"),
              Broken("w41", *TORN_FILE, place=at, order=3, write="w40-w41")]
    assert sorted((f.lines, f.place, [b.point for b in f.points]) for f in group_failures(differ)) == [
        ((), at, ["w40", "w41"]), (("/p/s.py:31",), "/p/s.py:31", ["w12"]), (("/p/s.py:33",), "/p/s.py:33", ["w11"])]


def test_both_lines_text_is_shown_marked_with_a_gap_between_far_lines(tmp_path):
    program = tmp_path / "scraper.py"
    program.write_text("".join(f"line {n}\n" for n in range(1, 41)))
    near = excerpt_lines([f"{program}:31", f"{program}:33"], "")
    assert near == [f"{'>' if n in (31, 33) else ' '} {n} | line {n}" for n in range(29, 36)]
    far = excerpt_lines([f"{program}:5", f"{program}:33"], "")
    assert far == ["   3 | line 3", "   4 | line 4", ">  5 | line 5", "   6 | line 6", "   7 | line 7", "  .. |",
                   "  31 | line 31", "  32 | line 32", "> 33 | line 33", "  34 | line 34", "  35 | line 35"]
    failures = group_failures([Broken("w1", *TORN_FILE, order=0, line=f"{program}:33", write="w1-w2"),
                               Broken("w2", *TORN_FILE, order=1, line=f"{program}:31", write="w1-w2")])
    printed = failure_lines(failures, lambda b: f"killtest replay --schedule {b.point}")
    assert printed[0] == f"failure 1 of 1, at {program}:31 and 33: {TORN_FILE[1][0]}"
    assert "    > 31 | line 31" in printed and "    > 33 | line 33" in printed and "      32 | line 32" in printed


def test_the_junit_case_and_the_page_of_a_torn_write_name_both_its_lines(tmp_path):
    """The outputs read the grouped failures: one JUnit failing case for the two pieces, its text with both lines
    marked; the page's source block bolds both."""
    import xml.etree.ElementTree as ElementTree

    from killtest.harness.campaigns.exploration import PointOutcome
    from killtest.harness.cli.ci_output import point_cases
    from killtest.harness.report.junit import write_junit
    from killtest.harness.report.triage import point_failures
    from killtest.harness.report.triage_page import failure_view, triage_page

    program = tmp_path / "scraper.py"
    program.write_text("".join(f"line {n}\n" for n in range(1, 41)))
    outcomes = [PointOutcome(f"w{n}", True, False, list(TORN_FILE[1]), 1, 2, findings=list(TORN_FILE[0]),
                             where=f"before the write {n}", place="before the write to dataset/N.json",
                             line=f"{program}:{line}", write="w11-w12") for n, line in ((11, 33), (12, 31))]
    outcomes.append(PointOutcome("w13", True, True, [], 1, 2))
    write_junit(str(tmp_path / "junit.xml"), "explore", point_cases("shop", outcomes, lambda b: f"replay {b.point}"))
    cases = ElementTree.parse(tmp_path / "junit.xml").getroot().iter("testcase")
    failed = [case for case in cases if case.find("failure") is not None]
    assert len(failed) == 1 and failed[0].get("name").endswith(f"at {program}:31 and 33: {TORN_FILE[1][0]}")
    text = failed[0].find("failure").text
    assert "> 31 | line 31" in text and "> 33 | line 33" in text and "  32 | line 32" in text
    [failure] = point_failures(outcomes)
    page = triage_page("t", [], [failure_view(failure, "replay w11")], [], [])
    assert "<b>31 | line 31</b>" in page and "<b>33 | line 33</b>" in page and "<b>32 |" not in page
