"""`w<k>:<file>`: a store write named by its file, whichever thread makes it (harness/faults/file_aims.py), carried
out by the file gate (harness/faults/file_gate.py: seccomp's user notification).

A thread pool that writes each file atomically (Crawlee for Python, the Apify SDK) had none of its writes explored:
strace counts per thread, and which pool thread takes a write changes every start. The plan and the offering are
tested on hand-made strace logs; the gate on a real six-thread pool (the kill before the k-th rename of one file
leaves its (k-1)-th content, every k); and a real explore of a Python crawler built that way finds its lost records
before the renames of its dataset files, with a replay line that fails again from another directory.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys

import pytest

from killtest.harness.errors import KilltestError
from killtest.harness.faults.file_aims import named_by_id, offered_writes, plan_for_file_write
from killtest.harness.faults.points import parse_point
from killtest.harness.faults.points.power_cut import PowerCutAtStoreWrite
from killtest.harness.faults.points.store_write import FILE_GATE, AtStoreWrite
from killtest.harness.faults.store_writes import agreeing_writes, parse_recording
from tests.test_explore_coverage import explore_pool_crawler

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scraper_fixtures")
needs_seccomp = pytest.mark.skipif(platform.machine() != "x86_64" or not sys.platform.startswith("linux"),
                                   reason="the file gate's filter names x86_64 system calls")


def log(*calls: tuple[int, str, str]) -> str:
    """strace lines: (tid, system call, files) with `write` on a descriptor and `rename` by its two paths."""
    lines = []
    for tid, name, files in calls:
        paths = files.split(">")
        if name == "rename":
            lines.append(f'{tid} rename("/w/{paths[0]}", "/w/{paths[1]}") = 0')
        else:
            lines.append(f'{tid} {name}(3</w/{paths[0]}>, "x", 1) = 1')
    return "\n".join(lines) + "\n"


def test_a_point_names_its_file_relative_to_the_work_dir_and_says_so_back():
    point = parse_point("w2:storage/datasets/000000003.json")
    assert isinstance(point, AtStoreWrite) and (point.index, point.file, point.connection) == (
        2, "storage/datasets/000000003.json", None)
    assert point.spec == "w2:storage/datasets/000000003.json"
    assert parse_point("w2:./storage//x.json").spec == "w2:storage/x.json"
    assert parse_point("w3:c2").connection == 2  # a connection still reads as one
    cut = parse_point("xw1:storage/datasets/7.json")
    assert isinstance(cut, PowerCutAtStoreWrite) and cut.spec == "xw1:storage/datasets/7.json"
    for wrong in ("w1:/etc/passwd", "w1:../x.json", "w1:", "w0:x.json", "xw1:c2"):
        with pytest.raises(KilltestError):
            parse_point(wrong)


def test_the_plan_counts_every_threads_calls_of_one_system_call_that_name_the_file():
    recording = parse_recording(log((7, "write", "d/1.json.a.tmp"), (8, "write", "d/2.json.b.tmp"),
                                    (8, "rename", "d/2.json.b.tmp>d/2.json"), (7, "write", "d/2.json"),
                                    (9, "rename", "d/2.json.c.tmp>d/2.json")), {"work_dir": "/w"})
    first = plan_for_file_write(recording, "d/2.json", 1)
    assert first is not None and (first.syscall, first.when, first.target, first.any_thread) == (
        "rename", 1, ("d/2.json",), True)
    third = plan_for_file_write(recording, "d/2.json", 3)  # the 3rd call naming it: thread 9's, the 2nd rename
    assert third is not None and (third.syscall, third.when) == ("rename", 2)
    assert plan_for_file_write(recording, "d/2.json", 4) is None  # the start names it three times: never reached
    with pytest.raises(ValueError, match="makes no store write to d/9.json"):
        plan_for_file_write(recording, "d/9.json", 1)


def test_explore_offers_by_file_only_what_w_n_cannot_name_and_never_a_random_or_hashed_name():
    first = parse_recording(log((7, "write", "q/a.json"), (8, "write", "d/1.json.ab12cd.tmp"),
                                (8, "rename", "d/1.json.ab12cd.tmp>d/1.json"), (7, "write", "q/3dKP6nvOXJs3nbl.json"),
                                (9, "rename", "d/2.json.x.tmp>d/2.json")), {"work_dir": "/w"})
    second = parse_recording(log((7, "write", "q/a.json"), (9, "write", "d/1.json.zz99yy.tmp"),
                                 (9, "rename", "d/1.json.zz99yy.tmp>d/1.json"), (8, "write", "q/3dKP6nvOXJs3nbl.json"),
                                 (8, "rename", "d/2.json.y.tmp>d/2.json")), {"work_dir": "/w"})
    agreed = agreeing_writes(first, second)
    assert agreed == [1]
    offered = offered_writes(first, second, agreed)
    # the rename by its destination (its temporary source is named anew); not the temp file's write, not the hash
    assert offered == {1: None, 3: ("d/1.json", 1), 5: ("d/2.json", 1)}
    assert named_by_id("q/3dKP6nvOXJs3nbl.json") and named_by_id("d/1.json.ab12cd_q.tmp")
    assert named_by_id("q/product_2.json.abcdefgh.tmp")  # tempfile's eight random letters, no digit among them
    assert not named_by_id("storage/datasets/default/000000003.json") and not named_by_id("datasets/SKU-95471.json")


POOL = """
import os, random, sys
from concurrent.futures import ThreadPoolExecutor
folder = sys.argv[1]
def atomic(name, data):
    temporary = os.path.join(folder, f"{name}.{random.randrange(10**9)}.tmp")
    with open(temporary, "w") as out:
        out.write(data)
    os.replace(temporary, os.path.join(folder, name))
with ThreadPoolExecutor(6) as pool:
    for turn in range(3):
        list(pool.map(lambda i: atomic(f"{i}.json", str(turn)), range(8)))
print("done", flush=True)
"""


@needs_seccomp
def test_the_file_gate_kills_before_the_kth_rename_of_a_file_whichever_pool_thread_makes_it(tmp_path):
    """Six threads write eight files three times over, each by a rename over it; the kill before the k-th rename of
    5.json leaves its (k-1)-th content (none at k = 1), and a k past the last lets the program finish."""
    (tmp_path / "pool.py").write_text(POOL)
    for k, left in ((1, None), (2, "0"), (3, "1"), (4, "2")):
        folder = tmp_path / f"k{k}"
        folder.mkdir()
        done = subprocess.run([sys.executable, "-S", FILE_GATE, "rename", str(k), str(folder / "5.json"), "--",
                               sys.executable, str(tmp_path / "pool.py"), str(folder)],
                              capture_output=True, text=True, timeout=60, start_new_session=True)
        target = folder / "5.json"
        assert (target.read_text() if target.exists() else None) == left, (k, done.stderr)
        assert done.returncode == (0 if k == 4 else -9), (k, done.returncode, done.stderr)
        assert ("done" in done.stdout) == (k == 4)


@pytest.mark.slow
@needs_seccomp
@pytest.mark.skipif(shutil.which("strace") is None, reason="the recording needs strace")
def test_explore_kills_a_python_pool_crawler_at_its_dataset_renames_and_finds_the_record_it_loses(tmp_path):
    """Every rename of a dataset file is explored (by its place or by its file), a kill before one loses that
    product's record (the crawler marked it handled first), and the replay line fails again from elsewhere."""
    done, out = explore_pool_crawler(tmp_path, "python-pool-writes",
                                     f'"{sys.executable}", "{FIXTURES}/python_pool_writes.py", "{{base_url}}"')
    assert done.returncode == 1, done.stderr[-3000:]
    found = json.loads((out / "explore-python-pool-writes.json").read_text())
    renames = {w["file"]: w for w in found["coverage"]["writes"]}["storage/datasets/SKU-N.json.N.tmp to"
                                                                  " storage/datasets/SKU-N.json"]
    assert renames["seen"] == 3 and renames["points"] == 3, found["coverage"]
    # the renames are one line of the program's (its os.replace): one failure, its kinds of write inside it
    lost = [f for f in found["failures"] if f["line"].endswith("python_pool_writes.py:27")]
    assert len(lost) == 1 and "lost" in lost[0]["findings"], found["failures"]
    places = {kind["place"] for kind in lost[0]["by_place"]}
    assert "before the rename of storage/datasets/SKU-N.json.N.tmp to storage/datasets/SKU-N.json" in places, places
    assert lost[0]["example"].startswith(("w1:storage/", "aw1:storage/")), lost[0]  # a point by file, or its twin
    assert not [o for o in found["outcomes"] if o.get("off_aim")]
    # a dataset rename's kill loses that product, whatever its neighbours did (a queue rename's loses a neighbour's
    # record only when the threads raced so): replayed alone, from another directory, it loses again
    dataset = next(o["point"] for o in found["outcomes"] if o["point"].startswith("w1:storage/datasets/"))
    assert not next(o for o in found["outcomes"] if o["point"] == dataset)["valid"]
    replay = lost[0]["replay"].replace(f"--schedule {lost[0]['example']}", f"--schedule {dataset}")
    replay = replay.replace("killtest replay", f"{sys.executable} -m killtest replay", 1)
    again = subprocess.run(replay + f" --out {tmp_path / 'again'}", shell=True, cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 1 and "broke no_lost_records" in again.stdout + again.stderr, again.stderr[-2000:]
