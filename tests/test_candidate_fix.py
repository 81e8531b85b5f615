"""A candidate fix shown to work (issue 44, item 5): a patch in a case folder applied to a release's installed
packages in an env of its own, its release a `candidate fix`, and the points that name a write by the file its
data ends up in (`w2:into:FILE`), so that a release and its patched copy are killed at the same operation.

The env tests build a real npm package (`npm pack` of a folder made here: no registry) into a cache of their own;
the gate test runs a real program that writes each version of a file to a temporary file and renames it over.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys

import pytest

from killtest.harness.check.findings import FINDINGS
from killtest.harness.design.case_spec import load_case
from killtest.harness.env_patches import patched_hash
from killtest.harness.errors import KilltestError
from killtest.harness.faults.file_aims import (
    finals,
    offered_writes,
    plan_for_file_write,
    temporary_pattern,
    writes_into,
)
from killtest.harness.faults.points import parse_point
from killtest.harness.faults.points.store_write import FILE_GATE, gate_options
from killtest.harness.faults.store_writes import agreeing_writes, parse_recording
from killtest.harness.report.case_fix_table import fix_comparison, operation, with_fixes
from killtest.harness.tool_envs import ensure_env, env_hash
from tests.test_cases import GOOD, make_case
from tests.test_file_aims import log

needs_npm = pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None, reason="needs npm")
needs_seccomp = pytest.mark.skipif(platform.machine() != "x86_64" or not sys.platform.startswith("linux"),
                                   reason="the file gate's filter names x86_64 system calls")

FIX = """\
--- a/tiny-answer/index.js
+++ b/tiny-answer/index.js
@@ -1,3 +1,3 @@
 // the answer
-exports.answer = 41;
+exports.answer = 42;
 exports.name = 'tiny';
"""


def tiny_package(tmp_path) -> str:
    """A real npm package, packed by npm: the tarball's path (npm installs it with no registry)."""
    folder = tmp_path / "tiny-answer"
    folder.mkdir()
    (folder / "package.json").write_text(json.dumps({"name": "tiny-answer", "version": "1.0.0", "main": "index.js"}))
    (folder / "index.js").write_text("// the answer\nexports.answer = 41;\nexports.name = 'tiny';\n")
    packed = subprocess.run(["npm", "pack", "--silent", str(folder)], cwd=tmp_path, capture_output=True, text=True,
                            check=True, timeout=120).stdout.strip().splitlines()[-1]
    return str(tmp_path / packed)


def answer(env) -> str:
    return subprocess.run(["node", "-e", "console.log(require('tiny-answer').answer)"], env=env.environ(),
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()


@needs_npm
def test_a_patch_is_applied_to_the_installed_package_in_an_env_of_its_own(tmp_path):
    tarball, patch = tiny_package(tmp_path), tmp_path / "fix.dist.patch"
    patch.write_text(FIX)
    root = str(tmp_path / "cache")
    published = ensure_env("node", (tarball,), root=root, say=lambda line: None)
    said: list[str] = []
    patched = ensure_env("node", (tarball,), root=root, say=said.append, patch=str(patch))
    assert patched.root != published.root and "patched with" in said[0]
    assert (answer(published), answer(patched)) == ("41", "42")  # the published env is untouched
    about = json.loads(open(os.path.join(patched.root, "killtest-env.json")).read())
    assert about["patch"] == str(patch) and len(about["patch_sha256"]) == 64
    assert ensure_env("node", (tarball,), root=root, say=pytest.fail, patch=str(patch)) == patched  # cached


@needs_npm
def test_a_patch_that_does_not_apply_is_one_line_naming_the_file_and_the_hunk_and_leaves_no_env(tmp_path):
    tarball, patch = tiny_package(tmp_path), tmp_path / "stale.dist.patch"
    patch.write_text(FIX.replace("exports.answer = 41;", "exports.answer = 40;"))
    root = str(tmp_path / "cache")
    with pytest.raises(KilltestError) as raised:
        ensure_env("node", (tarball,), root=root, say=lambda line: None, patch=str(patch))
    message = str(raised.value)
    assert "\n" not in message and "stale.dist.patch does not apply" in message
    assert "tiny-answer/index.js: hunk #1 FAILED at line 1" in message, message
    assert not [name for name in os.listdir(root) if not name.startswith(".") and "." not in name]  # no env named


def test_the_patched_env_key_differs_from_the_published_one_and_follows_the_patch(tmp_path):
    patch = tmp_path / "fix.dist.patch"
    patch.write_text(FIX)
    digest = env_hash("node", ["crawlee@3.18.1"], "node-20")
    first = patched_hash(digest, str(patch))
    assert first != digest and len(first) == len(digest)
    patch.write_text(FIX + " \n")
    assert patched_hash(digest, str(patch)) != first  # an edited patch is another env


@pytest.mark.parametrize("change, named", [
    ('patch = "fix/a.dist.patch"\n', None),
    ('patch = "fix/a.dist.patch"\nrole = "fixed"\n', "a release with a `patch` is a 'candidate fix', not 'fixed'"),
    ('role = "candidate fix"\n', "'candidate fix' is the role of a release with a `patch`"),
    ('patch = "fix/none.dist.patch"\n', "release 1.1.patch: no patch at"),
    ('patch = "/etc/passwd"\n', "release 1.1.patch: a patch file in the case folder is expected"),
    ('patch = "fix/a.dist.patch"\nlabel = "upsert"\n', "a patched release's label says so"),
])
def test_a_patched_release_is_a_candidate_fix_keyed_patched_and_a_wrong_one_is_one_line(tmp_path, change, named):
    text = GOOD.replace('status = "fixed"', 'status = "open"') + \
        '\n[[release]]\nversion = "1.1"\npackages = ["crawlee==1.1.0"]\n' + change + "expect = []\n"
    folder = make_case(tmp_path, text)
    os.mkdir(os.path.join(folder, "fix"))
    open(os.path.join(folder, "fix", "a.dist.patch"), "w").write(FIX)
    if named is None:
        release = load_case(folder, FINDINGS).releases[-1]
        assert (release.key, release.role, release.label) == ("1.1-patched", "candidate fix", "patched")
        assert release.patch == os.path.join(folder, "fix", "a.dist.patch")
        return
    with pytest.raises(KilltestError, match="case.toml: release 1.1") as raised:
        load_case(folder, FINDINGS)
    assert named in str(raised.value) and "\n" not in str(raised.value)


def crawlee_like(pid: int):
    """Two versions of q/X1a2B3c.json and one of d/1.json, each written to .tmp/<name>.<pid>.<n> and renamed over."""
    calls, n = [], 0
    for name in ("q/X1a2B3c.json", "d/1.json", "q/X1a2B3c.json"):
        n += 1
        temporary = f".tmp/{os.path.basename(name)}.{pid}.{n}"
        calls += [(7, "write", temporary), (7, "rename", f"{temporary}>{name}")]
    return parse_recording(log(*calls), {"work_dir": "/w"})


def test_a_temporary_file_is_known_by_the_file_it_is_renamed_to_and_offered_by_it():
    first, second = crawlee_like(111), crawlee_like(222)
    assert finals(first)[".tmp/X1a2B3c.json.111.3"] == "q/X1a2B3c.json"
    assert writes_into(first, "q/X1a2B3c.json") == [1, 5]
    pattern = temporary_pattern(".tmp/X1a2B3c.json.111.3", "q/X1a2B3c.json")
    assert pattern == r"\.tmp/X1a2B3c\.json\.\d+\.\d+"
    assert temporary_pattern(".tmp/other.111", "q/X1a2B3c.json") is None
    assert agreeing_writes(first, second) == []  # no write agrees by number: the pid is in every name
    offered = offered_writes(first, second, [])
    # every write by the file its data ends up in, every rename by the file it renames over (a hashed name too)
    assert offered == {1: ("into:q/X1a2B3c.json", 1), 2: ("q/X1a2B3c.json", 1), 3: ("into:d/1.json", 1),
                       4: ("d/1.json", 1), 5: ("into:q/X1a2B3c.json", 2), 6: ("q/X1a2B3c.json", 2)}
    plan = plan_for_file_write(first, "into:q/X1a2B3c.json", 2)
    assert plan is not None and (plan.syscall, plan.when, plan.target, plan.like) == (
        "write", 2, ("q/X1a2B3c.json",), (pattern,))
    # unpatched, the same operation is the 2nd write to the file itself
    direct = parse_recording(log((7, "write", "q/X1a2B3c.json"), (7, "write", "d/1.json"),
                                 (7, "write", "q/X1a2B3c.json")), {"work_dir": "/w"})
    same = plan_for_file_write(direct, "into:q/X1a2B3c.json", 2)
    assert same is not None and (same.syscall, same.when, same.like) == ("write", 2, ())
    point = parse_point("xw2:into:q/X1a2B3c.json")
    assert point.spec == "xw2:into:q/X1a2B3c.json"


ATOMIC = """
import os, sys
folder = sys.argv[1]
os.makedirs(os.path.join(folder, ".tmp"), exist_ok=True)
for n, (name, data) in enumerate([("X.json", "v1"), ("Y.json", "y1"), ("X.json", "v2"), ("X.json", "v3")], 1):
    temporary = os.path.join(folder, ".tmp", f"{name}.{os.getpid()}.{n}")
    with open(temporary, "w") as out:
        out.write(data)
    os.rename(temporary, os.path.join(folder, name))
print("done", flush=True)
"""


@needs_seccomp
def test_the_file_gate_kills_at_the_kth_write_into_a_file_made_to_its_temporary_file(tmp_path):
    """The k-th write into X.json is the write of its k-th version to a temporary file named by the pid (another
    one than the recording's): killed there, X.json keeps the version before it and the temporary file is empty."""
    (tmp_path / "atomic.py").write_text(ATOMIC)
    calls = [(1, "write", ".tmp/X.json.5.1"), (1, "rename", ".tmp/X.json.5.1>X.json"), (1, "write", ".tmp/Y.json.5.2"),
             (1, "rename", ".tmp/Y.json.5.2>Y.json"), (1, "write", ".tmp/X.json.5.3"),
             (1, "rename", ".tmp/X.json.5.3>X.json"), (1, "write", ".tmp/X.json.5.4"),
             (1, "rename", ".tmp/X.json.5.4>X.json")]
    recording = parse_recording(log(*calls), {"work_dir": "/w"})
    for k, left in ((2, "v1"), (3, "v2")):
        folder = tmp_path / f"k{k}"
        folder.mkdir()
        plan = plan_for_file_write(recording, "into:X.json", k)
        assert plan is not None and plan.like
        prefix = gate_options(plan, {"work_dir": str(folder)}).command_prefix
        assert FILE_GATE in prefix
        done = subprocess.run([*prefix, sys.executable, str(tmp_path / "atomic.py"), str(folder)],
                              capture_output=True, text=True, timeout=60, start_new_session=True)
        assert (folder / "X.json").read_text() == left, (k, done.stderr)
        assert (done.returncode, "done" in done.stdout) == (-9, False), done.stderr
        assert [p.stat().st_size for p in (folder / ".tmp").iterdir()] == [0]  # the killed version's, empty


def test_a_published_point_and_a_patched_one_pair_by_the_operation_they_kill_at(tmp_path):
    where = "before the 2nd write to q/X1a2B3c.json, 476 bytes, after request 1 (/list/0)"
    assert operation("w14", where) == "w2:into:q/X1a2B3c.json"
    assert operation("xw14", where) == "xw2:into:q/X1a2B3c.json"
    assert operation("aw14", where.replace("before", "after")) == "aw2:into:q/X1a2B3c.json"
    assert operation("w14", where + " (off its aim: the kill was meant for ...)") == ""
    fsync = "before the 1st fsync of jobdir/requests.seen, after request 3"
    assert operation("xw9", fsync) == "xw1:fsync:jobdir/requests.seen"
    assert operation("w2:q/X1a2B3c.json", "") == "rename:w2:q/X1a2B3c.json"
    for side, outcomes in (("before", [{"point": "w14", "where": where, "landed": True, "valid": False,
                                        "findings": ["lost"]},
                                       {"point": "w15", "where": "", "landed": False, "valid": True}]),
                           ("after", [{"point": "w2:into:q/X1a2B3c.json", "where": "", "landed": True, "valid": True},
                                      {"point": "w2:q/X1a2B3c.json", "where": "", "landed": True, "valid": True}])):
        (tmp_path / side).mkdir()
        (tmp_path / side / "explore-x.json").write_text(json.dumps({"outcomes": outcomes}))
    fix = fix_comparison({"key": "3.18.1", "out": str(tmp_path / "before")},
                         {"key": "3.18.1-patched", "out": str(tmp_path / "after")})
    assert (fix["paired"], fix["broken_before"], fix["broken_after"], fix["fixed"]) == (1, 1, 0, 1)
    assert fix["pairs"][0]["before"] == {"point": "w14", "result": "lost"}
    assert fix["only_before"] == {"not landed": 1} and fix["only_after"] == {"held": 1}
    rows = [{"version": "3.18.1", "key": "3.18.1", "role": "unreported", "out": str(tmp_path / "before")},
            {"version": "3.18.1", "key": "3.18.1-patched", "role": "candidate fix", "out": str(tmp_path / "after")}]
    assert with_fixes({"releases": rows})["fixes"] == [fix]
    gone = [{**row, "out": str(tmp_path / "gone")} for row in rows]  # a checkout without the explorations' folders
    assert with_fixes({"releases": gone, "fixes": [fix]})["fixes"] == [fix]


def test_each_case_readme_holds_its_fix_block_as_generated_from_its_exploration():
    """A README's before/after table is explore.json's, as write_fix_blocks writes it: no figure typed by hand."""
    from killtest.harness.design.case_spec import CASES_FOLDER
    from killtest.harness.report.case_fix_table import MARKERS, fix_block

    results = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results", "cases")
    for name in sorted(os.listdir(CASES_FOLDER)):
        readme = os.path.join(CASES_FOLDER, name, "README.md")
        text = open(readme, encoding="utf-8").read() if os.path.exists(readme) else ""
        if MARKERS[0] not in text:
            continue
        body = text[text.index(MARKERS[0]) + len(MARKERS[0]):text.index(MARKERS[1])].strip("\n")
        assert body == (fix_block(os.path.join(results, name)) or ""), name
