"""Store-write points explore offers for a file store: only writes two recordings of the start agree on.

`w<n>` printed by explore is aimed again when `killtest replay` records the start anew, so it must name
the same write on both: the agreement of two strace logs (store_writes.agreeing_writes), a design's two
real recordings, and a design whose writes change from one start to the next.
"""

import shutil
import sys
import textwrap

import pytest

from killtest.fixture_site.catalog import build_catalog
from killtest.harness.design.registry import design_named
from killtest.harness.design.specfile import load_spec
from killtest.harness.faults.store_writes import agreeing_writes, parse_recording
from killtest.harness.running.orchestrator import stage
from killtest.harness.running.runner import RunSettings
from killtest.harness.running.write_plans import store_write_points

needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
SETTINGS = RunSettings(lease_s=0.2, time_limit_s=60)
VALUES = {"work_dir": "/tmp/run", "store": "/tmp/run/shop.sqlite"}
# One start's store writes: two transactions of a WAL, each two frames and a commit, on thread 100.
WRITES = [(100, 'pwrite64(3</tmp/run/shop.sqlite-wal>, "\\0", 24, 32) = 24'),
          (100, 'pwrite64(3</tmp/run/shop.sqlite-wal>, "\\0", 4096, 56) = 4096'),
          (100, "fdatasync(3</tmp/run/shop.sqlite-wal>) = 0"),
          (100, 'pwrite64(3</tmp/run/shop.sqlite-wal>, "\\0", 24, 4152) = 24'),
          (100, 'pwrite64(3</tmp/run/shop.sqlite-wal>, "\\0", 4096, 4176) = 4096'),
          (100, "fdatasync(3</tmp/run/shop.sqlite-wal>) = 0")]
# A timer thread's save: where it lands among the others' writes depends on the clock.
TIMER = (200, 'write(5</tmp/run/state.json>, "{}", 2) = 2')
OTHER_FILE = (100, 'pwrite64(4</tmp/run/shop.sqlite>, "\\0", 4096, 0) = 4096')


def recording(writes):
    return parse_recording("".join(f"{tid} {call}\n" for tid, call in writes), VALUES)


def test_two_recordings_of_the_same_writes_agree_on_every_write_strace_can_reach():
    one = recording(WRITES)
    assert agreeing_writes(one, recording(WRITES)) == one.reachable_writes() == [1, 2, 3, 4, 5, 6]


def test_an_extra_write_makes_every_later_write_another_one():
    # A checkpoint's write on the second recording: from there on, w<n> names a different write.
    assert agreeing_writes(recording(WRITES), recording(WRITES[:2] + [OTHER_FILE] + WRITES[2:])) == [1, 2]
    assert agreeing_writes(recording(WRITES[:2] + [OTHER_FILE] + WRITES[2:]), recording(WRITES)) == [1, 2]


def test_a_write_to_another_file_is_not_the_same_write_nor_is_a_later_one_strace_counts_with_it():
    changed = WRITES[:3] + [OTHER_FILE] + WRITES[4:]
    # w4 went to another file; w5 is pwrite64 number 4 on both, but strace's count of pwrite64 to the
    # store's files holds w4's, whose file only one recording would give -P; w6, an fdatasync, does not.
    assert agreeing_writes(recording(WRITES), recording(changed)) == [1, 2, 3, 6]
    assert agreeing_writes(recording(WRITES), recording(WRITES[:4])) == [1, 2, 3, 4]  # the second made fewer


def test_a_temporary_file_named_by_pid_leaves_the_writes_of_other_calls_after_it_the_same():
    def effect(pid):
        return [(100, f'write(6</tmp/run/shot.png.{pid}.tmp>, "PNG", 3) = 3'),
                (100, f'rename("/tmp/run/shot.png.{pid}.tmp", "/tmp/run/shot.png") = 0')]

    def start(pid):
        return [*WRITES[:3], *effect(pid), *WRITES[3:], (100, 'write(7</tmp/run/log.txt>, "x", 1) = 1')]

    # The effect's own write and rename differ; the store's pwrite64 and fdatasync after them are the same
    # writes; the log's write is write number 2 of its thread on both, but strace would count the effect's.
    assert agreeing_writes(recording(start(4242)), recording(start(4343))) == [1, 2, 3, 6, 7, 8]


def test_threads_that_interleave_differently_agree_where_the_same_writes_came_before():
    early = [WRITES[0], TIMER, *WRITES[1:]]
    late = [*WRITES[:2], TIMER, *WRITES[2:]]
    # w2 and w3 are the timer's save on one and a frame on the other; from w4 on, the same writes came
    # before on both, and the thread ids, new each start, do not matter.
    renumbered = [(tid + 7, call) for tid, call in late]
    assert agreeing_writes(recording(early), recording(renumbered)) == [1, 4, 5, 6, 7]


def test_a_write_strace_cannot_reach_is_not_offered_though_both_recordings_agree_on_it():
    # Thread 101's first pwrite64: thread 100 reaches its own first pwrite64 before, so strace kills there.
    both = [WRITES[0], (101, WRITES[0][1]), *WRITES[1:]]
    assert agreeing_writes(recording(both), recording(both)) == [1, 3, 4, 5, 6, 7]


@needs_strace
def test_every_write_explore_offers_is_the_same_write_on_both_recordings():
    design = design_named("zoo-done-before-record")
    cache: dict = {}
    with stage(build_catalog(listing_pages=1, products_per_page=2), [design], prefork=True) as on:
        offered = store_write_points(design, on, SETTINGS, cache=cache)
    first, second = cache[(design.name, "")], cache[(design.name, "#again")]
    assert offered and first is not second
    for point in offered:
        n = point.index
        assert first.calls[n - 1].aim == second.calls[n - 1].aim, point.spec
        assert first.plan_for_write(n) == second.plan_for_write(n) == point.plan, point.spec
        assert sorted(c.aim for c in first.calls[:n]) == sorted(c.aim for c in second.calls[:n]), point.spec


SHIFTING = """\
import os, sys
# Each start writes three records; from the second start on, it notes its progress after the first: w2 on.
count = os.path.join(sys.argv[2], "starts")
starts = int(open(count).read()) + 1 if os.path.exists(count) else 1
open(count, "w").write(str(starts))
out = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
for n, sku in enumerate("abc"):
    if n == 1 and starts > 1:
        os.write(os.open(sys.argv[1] + ".progress", os.O_WRONLY | os.O_CREAT), b"1")
    os.write(out, ('{"sku": "%s", "price": 1}\\n' % sku).encode())
"""


@needs_strace
def test_a_design_whose_writes_shift_between_starts_is_offered_its_later_writes_by_their_file(tmp_path):
    (tmp_path / "shifting.py").write_text(SHIFTING)
    (tmp_path / "design.toml").write_text(textwrap.dedent(f"""\
        [design]
        name = "shifting-writes"
        command = [{sys.executable!r}, "{{spec_dir}}/shifting.py", "{{store}}", "{{spec_dir}}"]
        [store]
        kind = "jsonl"
        path = "{{work_dir}}/records.jsonl"
        key = "sku"
        fields = ["price"]
        """))
    design = load_spec(str(tmp_path / "design.toml"))
    cache: dict = {}
    with stage(build_catalog(listing_pages=1, products_per_page=2), [design]) as on:
        offered = [p.spec for p in store_write_points(design, on, SETTINGS, cache=cache)]
    first, second = cache[(design.name, "")], cache[(design.name, "#again")]
    # Each recording saw its start's writes, the second one more: from w2 on, a number names another write.
    assert [len(first.calls), len(second.calls)] == [3, 4]
    # so from w2 on the writes are named by their file: the 2nd and 3rd writes to records.jsonl are the same
    # writes on both (faults/file_aims.py); the progress file only the second start wrote is offered no point
    assert first.reachable_writes() == [1, 2, 3] and offered == ["w1", "w2:records.jsonl", "w3:records.jsonl"]
