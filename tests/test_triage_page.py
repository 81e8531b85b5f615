"""The triage page in a real browser, and distinct failures end to end (issue 24).

A real explore of the done-before-record mistake at a request that keeps its promises, a store write and a
commit-path line that break it; the page it writes is opened from the results folder by Chromium from the
distribution's packages (headless): a screenshot is taken, its console must stay silent, and the DOM it
rendered must hold a section per distinct failure the JSON lists. The grouping itself is tested on
hand-made points (check/distinct.py is pure).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from killtest.harness.campaigns.locate import innermost, py_spy
from killtest.harness.check.distinct import Broken, group_failures, header, point_ranges
from killtest.harness.faults.store_writes import parse_recording
from killtest.harness.report.triage import failure_lines, trial_failures

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LINE = "l:scrapers/zoo/done_before_record.py:complete+3:2"
TWO_MISTAKES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scraper_fixtures", "two_mistakes.py")
MARK_DONE_LINE, FLUSH_LINE = (next(n for n, line in enumerate(open(TWO_MISTAKES, encoding="utf-8"), 1) if text in line)
                              for text in ("progress.write(path", "records.flush()"))


def two_mistakes(tmp_path, before: tuple[str, ...] = ()) -> str:
    """A user's spec for tests/scraper_fixtures/two_mistakes.py, as a new user writes it: held to every promise
    (`before`: words its command starts with, as `env NAME=VALUE`)."""
    spec = tmp_path / "design.toml"
    command = json.dumps([*before, "python3", TWO_MISTAKES, "--base", "{base_url}", "--out", "{store}"])
    spec.write_text(f'[design]\nname = "two-mistakes"\ncommand = {command}\n\n[store]\nkind = "jsonl"\n'
                    'path = "{work_dir}/records.jsonl"\nkey = "sku"\nfields = ["price", "name"]\n'
                    'written_at = "scraped_at"\n')
    return str(spec)


def rendered(page, tmp_path) -> str:
    """The DOM Chromium (headless, from the distribution's packages) rendered of `page`, opened from its folder
    as a file: a screenshot is taken (kept beside the test's files) and the console must stay silent."""
    shot = tmp_path / f"{page.stem}.png"
    browser = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}"]
    shown = subprocess.run([*browser, "--enable-logging=stderr", "--v=0", "--window-size=1100,1600",
                            f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.stat().st_size > 10_000, shown.stderr[-2000:]
    assert [line for line in shown.stderr.splitlines() if ":CONSOLE" in line] == []
    return subprocess.run([*browser, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout


def sections_for(dom: str, failures: list[dict], passed: bool = True) -> None:
    """A section per distinct failure, in order, with its example, replay line and timeline; what passed below,
    when something did (`passed`): the green box holds only what passed."""
    for number, failure in enumerate(failures, 1):
        assert f'id="failure-{number}"' in dom and f'data-point="{failure["example"]}"' in dom
        assert failure["replay"].split(" --")[0] in dom
    assert dom.count('<section class="failure"') == len(failures)
    assert dom.count('<svg') >= len(failures) and ("What passed" in dom) is passed


def test_a_store_write_is_described_by_its_call_file_count_and_bytes():
    log = ('7 write(3</w/records.jsonl>, "{\\"sku\\": 1}"..., 31) = 31\n'
           '7 pwrite64(4</w/dataset/000001.json>, "abc", 3, 30) = 3\n'
           '7 write(3</w/records.jsonl>, "x", 1) = 1\n'
           '7 rename("/w/done.tmp", "/w/done.json") = 0\n')
    recording = parse_recording(log, {"work_dir": "/w"})
    assert [recording.describe_write(n) for n in (1, 2, 3, 4)] == [
        ("the 1st write to records.jsonl, 31 bytes", "write to records.jsonl"),
        ("the 1st pwrite64 to dataset/000001.json, 3 bytes at offset 30", "pwrite64 to dataset/N.json"),
        ("the 2nd write to records.jsonl, 1 byte", "write to records.jsonl"),
        ("the 1st rename of done.tmp to done.json", "rename of done.tmp to done.json")]


def test_the_programs_own_frame_is_found_in_a_stack_dump():
    dump = ("Thread 7 (idle): \"MainThread\"\n"
            "    flush (/usr/lib/python3.11/_pyio.py:12)\n"
            "    save (/home/me/scraper.py:40)\n"
            "    <module> (/home/me/scraper.py:52)\n")
    assert innermost(dump) == "save (/home/me/scraper.py:40)"


def test_points_are_shown_as_ranges():
    assert point_ranges(["w53", "w51", "w52", "r3", "w60", "xw4", "xw5", LINE]) == f"r3, w51-w53, w60, xw4-xw5, {LINE}"
    # One write of every product: a stride, shown as one range (the 201-point explore listed 39 of them).
    assert point_ranges([f"w{n}" for n in range(1, 116, 3)]) == "w1-w115 every 3rd"
    assert point_ranges(["w1", "w4", "w7", "w10", "w11", "w14", "w20", "w21"]) == "w1-w10 every 3rd, w11, w14, w20-w21"
    assert point_ranges(["w68", "w83", "w98", "w125"]) == "w68, w83, w98, w125"  # three in step: as short listed
    assert point_ranges([f"r{n}" for n in range(1, 40, 2)] + ["w5", "w9"], most=2) == "r1-r39 every 2nd, and 2 more"


def test_two_failures_that_break_a_promise_in_the_same_words_have_different_headings():
    lost = ("lost",), ("10 requests, more than 8 + 1 kills (broke bounded_requests)",)
    failures = group_failures([Broken("r2", *lost, place="on a request for /product/N", order=0),
                               Broken("w1", *lost, place="before the write to done.txt", order=1)])
    headings = [line for line in failure_lines(failures, lambda b: b.point) if line.startswith("failure ")]
    assert headings == ["failure 1 of 2, on a request for /product/N: 10 requests, more than 8 + 1 kills"
                        " (broke bounded_requests)",
                        "failure 2 of 2, before the write to done.txt: 10 requests, more than 8 + 1 kills"
                        " (broke bounded_requests)"]
    assert len({f.title for f in failures}) == 2  # the Markdown's, the page's and JUnit's headings too


def test_broken_points_group_by_findings_and_place_and_show_the_smallest_earliest():
    lost = ("lost",), ("lost 1 of 6 records (broke no_lost_records)",)
    extra = ("extra_rows",), ("7 rows for 6 products (broke no_duplicates)",)
    broken = [Broken("w9", *extra, place="write to records.jsonl", order=9),
              Broken("w3", *extra, place="write to records.jsonl", order=3),
              Broken("w4", *lost, place="write to records.jsonl", order=4),
              Broken("w5", *extra, place="rename of done.tmp to done", order=5)]
    failures = group_failures(broken)
    assert [(f.promises, len(f.points), f.example.point) for f in failures] == [
        (("no_duplicates",), 2, "w3"), (("no_lost_records",), 1, "w4"), (("no_duplicates",), 1, "w5")]
    assert header(30, 4, len(failures)) == "30 crash points, 4 broken, 3 distinct failures"


def test_a_fuzz_failure_is_shown_by_its_smallest_case_first():
    found = group_failures([Broken("r3,w9", ("lost",), ("lost",), place="w", size=2, order=0),
                            Broken("w9", ("lost",), ("lost",), place="w", size=1, order=5)])
    assert found[0].example.point == "w9"


def test_fuzzed_schedules_group_by_where_their_kills_landed_not_by_their_text():
    from killtest.harness.campaigns.fuzzing import Case, Trial

    def failed(schedule: str, place: str, pages: int = 2) -> Trial:
        return Trial(Case(pages, 3, schedule), ["lost 1 of 6 records (broke no_lost_records)"], True,
                     {"findings": ["lost"], "where": f"{schedule} before ...", "place": place})

    records = "before the write to records.jsonl and on a request for /product/N"
    failures = trial_failures([failed("r3,w9", records), failed("w12,r4", records, pages=1),
                               failed("w2", "before the write to done.txt"), Trial(Case(2, 3, "r1"), [], True)])
    assert [(f.place, [b.point for b in f.points], f.example.point) for f in failures] == [
        (records, ["r3,w9", "w12,r4"], "w12,r4"), ("before the write to done.txt", ["w2"], "w2")]
    assert failures[0].points_text() == "r3,w9; w12,r4"  # whole schedules, not one list of points
    assert failures[0].example.where == "w12,r4 before ... (on 1x3 products)"


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    """One fuzz of the two-mistakes design, as a user runs it: (its folder, what it printed)."""
    if shutil.which("strace") is None:
        pytest.skip("needs strace")
    folder = tmp_path_factory.mktemp("fuzz")
    out = folder / "results"
    done = subprocess.run([sys.executable, "-m", "killtest", "fuzz", "--design", two_mistakes(folder),
                           "--examples", "12", "--seed", "1", "-j", "1", "--out", str(out),
                           "--junit-xml", str(out / "junit.xml")], capture_output=True, text=True, timeout=600,
                          cwd=str(folder))
    assert done.returncode == 1, done.stderr[-2000:]
    return folder, done


@pytest.mark.slow
def test_fuzz_shows_each_distinct_failure_once_in_words_and_junit_has_a_case_for_each(fuzzed):
    folder, done = fuzzed
    out = folder / "results"
    found = json.loads((out / "fuzz-two-mistakes.json").read_text())
    assert found["distinct_failures"] == len(found["failures"]) >= 2
    assert f"{found['distinct_failures']} distinct failures" in done.stderr
    # A failure's points in the user's terms, as explore's: which write of which file, which request.
    told = [f for f in found["failures"] if re.search(r"(^|,)x?[rw]\d", f["example"])]
    assert told, found["failures"]
    for failure in told:
        assert re.search(r"before the \d+\w\w \w+ (to|of) |on request \d+ \(|after request \d+ \(", failure["where"]), \
            failure["where"]
        assert failure["place"] and not re.fullmatch(r"[a-z0-9N:.,+]+", failure["place"]), failure["place"]
    # JUnit: the shrunk failure, then one failing case per distinct failure, its schedules listed in it.
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    failing = [case for case in suite.iter("testcase") if case.find("failure") is not None]
    assert [case.get("name").split(":")[0] for case in failing] == [
        "shrunk", *(f"failure {n}" for n in range(1, len(found["failures"]) + 1))]
    for case, failure in zip(failing[1:], found["failures"]):
        text = case.find("failure").text
        assert f"schedules ({failure['count']}): {failure['points']}" in text and failure["replay"] in text


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium is not installed (apt-get install chromium)")
def test_fuzz_writes_the_same_triage_page_a_browser_renders_without_errors(fuzzed):
    folder, _ = fuzzed
    found = json.loads((folder / "results" / "fuzz-two-mistakes.json").read_text())
    dom = rendered(folder / "results" / "fuzz-two-mistakes.html", folder)
    sections_for(dom, found["failures"])
    assert "schedules kept every promise" in dom


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium is not installed (apt-get install chromium)")
def test_run_writes_the_triage_page_without_plots_and_a_browser_renders_it_without_errors(tmp_path):
    """`run --no-plot` (as on a core install, without matplotlib): the page is HTML and SVG, written all the same,
    its distinct failure first with its run's timeline, the store's lost keys and the replay line."""
    out = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", two_mistakes(tmp_path), "--runs", "2",
                           "--schedule", "r3", "--listing-pages", "2", "--per-page", "3", "--no-plot",
                           "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"results: {out / 'killtest'}.{{json,md,html}} — FAIL" in done.stderr
    assert not list(out.glob("*.png"))
    dom = rendered(out / "killtest.html", tmp_path)
    assert "run: 2 runs, 2 failed, 1 distinct failure" in done.stderr  # the same exact schedule: the same failure
    replay = next(line for line in done.stderr.splitlines() if line.startswith("replay two-mistakes run 1: "))
    sections_for(dom, [{"example": "run1", "replay": replay.split(": ", 1)[1]}], passed=False)  # both runs failed
    assert "lost (on the site, not in the store after a crawl that finished or a start that crashed)" in dom
    assert "SKU-" in dom
    assert "Run by run" in dom  # the tables follow, as on the page with plots


@pytest.mark.slow
@pytest.mark.skipif(py_spy() is None or shutil.which("strace") is None, reason="needs py-spy and strace")
def test_a_command_that_starts_with_the_python_placeholder_is_located_in_its_source(tmp_path):
    """`command = ["{python}", ...]` (zoo-done-before-record-cmd) is a Python program: its store write is found
    in the program's own file, as for `python3 ...`, not "not a Python or Node.js program"."""
    out = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", "zoo-done-before-record-cmd",
                           "--only", "w69", "--listing-pages", "2", "--per-page", "3", "-j", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr[-2000:]  # w69: between the page's done mark and its record
    found = json.loads((out / "explore-zoo-done-before-record-cmd.json").read_text())
    [failure] = found["failures"]
    assert failure["example"] == "w69"
    assert re.search(r", in \S+ \(\S+/scrapers/(zoo/)?\w+\.py:\d+\)$", failure["where"]), failure["where"]


@pytest.mark.slow
@pytest.mark.skipif(py_spy() is None or shutil.which("strace") is None, reason="needs py-spy and strace")
@pytest.mark.parametrize("before", [("env", "PYTHONUNBUFFERED=1"), ("/usr/bin/env", "-u", "NO_SUCH_VAR", "-i", "--",
                                                                     "PATH=" + os.environ["PATH"], "A={work_dir}")])
def test_a_command_that_starts_with_env_is_located_in_the_program_env_runs(tmp_path, before):
    """`env`, its options and its NAME=VALUE assignments are not the program: the Python program after them is
    held at its store write and found in its own source, as without them."""
    out = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", two_mistakes(tmp_path, before),
                           "--only", "w1", "--listing-pages", "2", "--per-page", "3", "-j", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr[-2000:]  # w1: the page marked done before its record is stored
    [failure] = json.loads((out / "explore-two-mistakes.json").read_text())["failures"]
    assert failure["where"].endswith(f", in mark_done ({TWO_MISTAKES}:{MARK_DONE_LINE})"), failure["where"]


def test_the_program_is_read_past_env_its_options_and_its_assignments():
    from killtest.harness.faults.write_gate import program_at

    assert program_at(["python3", "x.py"]) == 0
    assert program_at(["/usr/bin/env", "-i", "-uX", "-u", "Y", "--unset=Z", "--chdir", "/", "--", "A=1", "node"]) == 10
    assert program_at(["env", "-iu", "X", "A=1", "env", "B=2", "python3", "x.py"]) == 6  # env runs env
    assert program_at(["env", "-", "A=1", "python3"]) == 3  # `-` is -i
    assert program_at(["env", "A=1"]) is None  # no program: env prints its environment
    assert program_at(["env", "-S", "python3 -u", "x.py"]) is None  # the program is inside -S's string


@pytest.mark.slow
@pytest.mark.skipif(py_spy() is None or shutil.which("strace") is None, reason="needs py-spy and strace")
def test_locating_runs_within_the_exploration_in_its_jobs_and_counts_in_its_time(tmp_path):
    """Each kind of failure's first store write is located as the exploration goes, in the job that found it: by
    one more run, or by reading the stack in the point's own run when the point before it broke (issue 35). Its
    time is part of the exploration's, a line says what it cost, and with -j 2 the words and the kinds located are
    those of -j 1 (w4 breaks as w1 does, at the same place: only w1, the first, is located)."""
    spec = two_mistakes(tmp_path)
    found = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}"
        done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", spec, "--only", "w1,w2,w3,w4",
                               "--listing-pages", "2", "--per-page", "3", "-j", jobs, "--out", str(out)],
                              capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
        assert done.returncode == 1, done.stderr[-2000:]
        found[jobs] = json.loads((out / "explore-two-mistakes.json").read_text())
        line = re.search(r"source locations: (3 kinds of failure located in the program: (\d+) from the stack read in"
                         r" the point's own run, (\d+) points? run once more; ([\d.]+) s of the exploration's"
                         r" ([\d.]+) s \([\d.]+%(?: of its processes' [\d.]+ s)?\))", done.stderr)
        assert line, done.stderr[-2000:]
        # w1, w2, w3: three kinds of failure; with -j 2 the jobs share what they claimed, so the second job does
        # not locate w4 again (it breaks as w1 did, which the first job has claimed). With -j 1, w1 is the first
        # point: run once more; w2 follows a broken point at a new kind of place: read in its own run; w3 follows a
        # broken point at w1's kind of place, read as a later point of a located kind may be: read in its own run,
        # it breaks differently, a new kind; w4, w1's kind's last, was read too: no run at the end
        assert int(line[2]) == found[jobs]["located_in_run"] and int(line[3]) == found[jobs]["locate_runs"]
        assert found[jobs]["located_in_run"] + found[jobs]["locate_runs"] == 3
        if jobs == "1":
            assert (found[jobs]["locate_runs"], found[jobs]["located_in_run"]) == (1, 2)
        assert line[1] in html.unescape((out / "explore-two-mistakes.html").read_text())
        assert 0 < found[jobs]["locate_s"] < found[jobs]["elapsed_s"]
    # (a row's size varies by a byte or two: its time.time() stamp has as many digits as it needs)
    where = {jobs: {o["point"]: re.sub(r"\d+ bytes", "N bytes", o["where"]) for o in found[jobs]["outcomes"]}
             for jobs in found}
    assert where["1"] == where["2"]
    assert where["1"]["w1"].endswith(f"in mark_done ({TWO_MISTAKES}:{MARK_DONE_LINE})"), where["1"]["w1"]
    assert where["1"]["w2"].endswith(f"in main ({TWO_MISTAKES}:{FLUSH_LINE})"), where["1"]["w2"]
    assert ", in " not in where["1"]["w4"]  # the same kind of failure as w1's: located once


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Chromium is not installed (apt-get install chromium)")
def test_explore_writes_a_triage_page_a_browser_renders_without_errors(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", "zoo-done-before-record",
                           "--only", f"r3,w68,{LINE}", "--listing-pages", "2", "--per-page", "3", "-j", "1",
                           "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr
    found = json.loads((out / "explore-zoo-done-before-record.json").read_text())
    assert found["distinct_failures"] == len(found["failures"]) >= 1
    assert f"3 crash points, {found['broken']} broken, {found['distinct_failures']} distinct failure" in done.stderr
    written = {o["point"]: o for o in found["outcomes"]}
    # A point that kept every promise is described too: the table's "where" cell says where its kill landed.
    assert written["r3"]["valid"] and re.fullmatch(r"on request 3 \(/\S+\), before its answer", written["r3"]["where"])
    table = (out / "explore-zoo-done-before-record.md").read_text()
    assert f"| `r3` | yes | ok | {written['r3']['where']} |" in table
    if not written["w68"]["valid"]:  # a store write, told in the user's terms, and its line in the program
        where = written["w68"]["where"]
        assert where.startswith("before the ") and " after request " in where
        if py_spy() is not None and any(f["example"] == "w68" for f in found["failures"]):
            assert re.search(r", in \S+ \(\S+/scrapers/zoo/\w+\.py:\d+\)$", where), where
    dom = rendered(out / "explore-zoo-done-before-record.html", tmp_path)
    sections_for(dom, found["failures"])
