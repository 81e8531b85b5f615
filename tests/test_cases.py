"""`killtest cases` (issue 23): case.toml errors, the env cache, and one real pair end to end.

The end-to-end test installs Crawlee for Python 1.6.1 and 1.6.2 from PyPI the first time (about 40 s,
cached in ~/.cache/killtest/cases/ after), runs both on the case's schedule (about 45 s), then pastes
the flagged run's replay line into a shell (about 35 s).
"""

from __future__ import annotations

import calendar
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from killtest.harness.campaigns.case_envs import ensure_env, env_hash
from killtest.harness.campaigns.case_installed import installed
from killtest.harness.check.findings import FINDINGS
from killtest.harness.design.case_spec import CASES_FOLDER, load_case, load_cases
from killtest.harness.errors import KilltestError
from killtest.harness.report.case_table import ANALYSES_PAGE, RESULTS, analyses_page, cases_markdown, read_results

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KILLTEST = [sys.executable, "-m", "killtest"]
GOOD = """\
[case]
title = "t"
framework = "crawlee-python"
upstream = ["https://example.invalid/1"]
status = "fixed"
runtime = "python"
args = ["--schedule", "r5"]

[[release]]
version = "1.0"
packages = ["crawlee==1.0.0"]
expect = ["lost"]

[[release]]
version = "1.1"
packages = ["crawlee==1.1.0"]
expect = []
"""


def make_case(tmp_path, text: str, name: str = "some-case"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "case.toml").write_text(text)
    (folder / "design.toml").write_text("")
    return str(folder)


def test_a_good_case_loads(tmp_path):
    case = load_case(make_case(tmp_path, GOOD), FINDINGS)
    assert [r.version for r in case.releases] == ["1.0", "1.1"]
    assert case.releases[0].expect == ("lost",) and case.releases[1].expect == ()
    assert case.releases[0].design.endswith("some-case/design.toml")


@pytest.mark.parametrize(("change", "named"), [
    (("status = \"fixed\"", "status = \"broken\""), "case.status"),
    (("runtime = \"python\"", "runtime = \"ruby\""), "case.runtime"),
    (("\"crawlee==1.0.0\"", "\"crawlee>=1.0\""), "release 1.0.packages"),
    (("expect = [\"lost\"]", "expect = [\"lots\"]"), "release 1.0.expect"),
    (("expect = [\"lost\"]", "expect = \"lost\""), "release 1.0.expect"),
    (("args = [\"--schedule\", \"r5\"]", "args = [\"--out\", \"x\"]"), "case.args"),
    (("title = \"t\"\n", "titel = \"t\"\n"), "case.titel"),
    (("expect = [\"lost\"]", "expect = []"), "case.status"),  # fixed: a buggy release is needed
    (("version = \"1.1\"", "version = \"1.0\""), "[[release]]"),  # the same release twice, no label
    (("[case]", "[case\n"), "not valid TOML"),
])
def test_a_bad_case_toml_is_one_line_naming_the_file_and_the_key(tmp_path, change, named):
    folder = make_case(tmp_path, GOOD.replace(*change))
    with pytest.raises(KilltestError) as error:
        load_case(folder, FINDINGS)
    message = str(error.value)
    assert "\n" not in message and "case.toml" in message and named in message


def test_a_clean_release_before_the_buggy_one_predates_the_bug_and_is_not_called_fixed(tmp_path):
    older = GOOD.replace("[[release]]\nversion = \"1.0\"",
                         "[[release]]\nversion = \"0.9\"\npackages = [\"crawlee==0.9.0\"]\nexpect = []\n\n"
                         "[[release]]\nversion = \"1.0\"", 1)
    case = load_case(make_case(tmp_path, older), FINDINGS)
    assert [(r.version, r.role) for r in case.releases] == [("0.9", "before the bug"), ("1.0", "buggy"),
                                                             ("1.1", "fixed")]
    said = load_case(make_case(tmp_path, GOOD.replace('expect = []\n', 'expect = []\nrole = "clean twin"\n'),
                               name="said"), FINDINGS)
    assert said.releases[1].role == "clean twin"
    flagged_roles = r"release 1.1.role: .*buggy, documented limitation, unreported exactly when expect names findings"
    with pytest.raises(KilltestError, match=flagged_roles):
        load_case(make_case(tmp_path, GOOD.replace('expect = []\n', 'expect = []\nrole = "buggy"\n'),
                            name="wrong"), FINDINGS)
    shipped = {c.name: c for c in load_cases(CASES_FOLDER, codes=FINDINGS)}
    # From 2.15.0 Scrapy's jobs page ("Pause limitations") says an unclean shutdown can corrupt the job directory.
    assert [r.role for r in shipped["scrapy-7094"].releases] == ["before the bug", "buggy", "documented limitation",
                                                                "fixed"]
    assert [r.role for r in shipped["scrapy-4106"].releases] == ["documented limitation", "candidate fix"]
    # What upstream documents is not filed as a bug; a loss no upstream issue reports is not called buggy.
    assert [r.role for r in shipped["apify-sdk-python-1103"].releases] == ["buggy", "documented limitation",
                                                                          "documented limitation"]
    assert {r.role for r in shipped["bullmq-at-least-once"].releases if r.expect} == {"documented limitation"}
    assert [r.role for r in shipped["crawlee-node-2085-locking"].releases] == ["unreported", "candidate fix"]


def test_the_analyses_page_is_the_one_generated_from_results_cases_json():
    """The page is never edited by hand: after a change to the generator or to results/cases.json, it is
    written again (`python -m killtest.harness.report.case_table --write`)."""
    with open(ANALYSES_PAGE, encoding="utf-8") as page:
        assert page.read() == analyses_page(read_results(RESULTS))


def test_a_missing_design_and_a_bad_folder_name_are_refused(tmp_path):
    folder = make_case(tmp_path, GOOD)
    os.remove(os.path.join(folder, "design.toml"))
    with pytest.raises(KilltestError, match=r"release 1.0.design: no design spec"):
        load_case(folder, FINDINGS)
    with pytest.raises(KilltestError, match="kebab-case"):
        load_case(make_case(tmp_path, GOOD, name="Some_Case"), FINDINGS)


def test_a_twin_release_with_a_label_loads_beside_its_version(tmp_path):
    twin = GOOD + '\n[[release]]\nversion = "1.1"\nlabel = "upsert twin"\npackages = ["crawlee==1.1.0"]\nexpect = []\n'
    case = load_case(make_case(tmp_path, twin), FINDINGS)
    assert [r.key for r in case.releases] == ["1.0", "1.1", "1.1-upsert-twin"]


def test_the_shipped_cases_load_and_an_unknown_one_is_exit_2_in_one_line():
    assert "crawlee-python-1825" in [c.name for c in load_cases(CASES_FOLDER, codes=FINDINGS)]
    done = subprocess.run([*KILLTEST, "cases", "--only", "no-such-case", "--out", os.devnull], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no case named no-such-case" in done.stderr


@pytest.mark.parametrize("only", ["", " , "])
def test_an_only_that_names_no_case_is_exit_2_in_one_line_not_every_case(only, tmp_path):
    done = subprocess.run([*KILLTEST, "cases", "--only", only, "--out", str(tmp_path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2, done.stdout
    assert done.stderr.strip().count("\n") == 0 and "--only names no case" in done.stderr
    assert not os.listdir(tmp_path)  # nothing ran


def test_the_env_hash_is_of_the_pins_in_any_order_and_of_the_interpreter():
    a = env_hash("python", ["a==1", "b==2"], "python-3.11")
    assert a == env_hash("python", ["b==2", "a==1"], "python-3.11")
    assert a != env_hash("python", ["a==1", "b==3"], "python-3.11")
    assert a != env_hash("python", ["a==1", "b==2"], "python-3.12")
    assert a != env_hash("node", ["a==1", "b==2"], "python-3.11")


@pytest.mark.slow
def test_a_failed_install_leaves_no_env_and_says_why_in_one_line(tmp_path):
    # crawlee has no release 0.0.0: pip fails after the venv was made.
    with pytest.raises(KilltestError) as error:
        ensure_env("python", ("crawlee==0.0.0",), root=str(tmp_path), say=lambda _: None)
    assert "\n" not in str(error.value) and "pip install crawlee==0.0.0 failed" in str(error.value)
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_an_install_killed_midway_is_never_taken_for_an_env_and_is_cleared_by_the_next(tmp_path):
    pins = ("six==1.16.0",)
    code = ("import sys; from killtest.harness.campaigns.case_envs import ensure_env;"
            f" ensure_env('python', {pins!r}, root={str(tmp_path)!r})")
    builder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    # Killed once its folder holds a venv's interpreter: the venv is made, pip has not finished.
    while time.monotonic() < deadline and not any(os.path.exists(os.path.join(tmp_path, n, "bin", "python"))
                                                  for n in os.listdir(tmp_path)):
        time.sleep(0.05)
    builder.send_signal(signal.SIGKILL)
    builder.wait()
    names = os.listdir(tmp_path)
    digest = env_hash("python", pins, f"python-{sys.version_info[0]}.{sys.version_info[1]}")
    assert names and digest not in names  # a half env is there, under a name no run takes
    env = ensure_env("python", pins, root=str(tmp_path), say=lambda _: None)
    assert sorted(os.listdir(tmp_path)) == sorted([digest, os.readlink(env.root)])  # the abandoned one is gone
    done = subprocess.run([os.path.join(env.bin, "python"), "-c", "import six; print(six.__version__)"],
                          capture_output=True, text=True)
    assert done.stdout.strip() == "1.16.0"
    assert ensure_env("python", pins, root=str(tmp_path), say=pytest.fail) == env  # cached: nothing said or built


@pytest.mark.slow
def test_a_built_env_records_what_its_pins_resolved_to_and_a_cached_one_gets_it_back(tmp_path):
    """python-dateutil pins nothing of six (`six>=1.5`): what was installed is read from the env, not the pin."""
    env = ensure_env("python", ("python-dateutil==2.9.0.post0",), root=str(tmp_path), say=lambda _: None)
    recorded = json.loads((tmp_path / os.readlink(env.root) / "installed.json").read_text())
    six = subprocess.run([os.path.join(env.bin, "python"), "-c", "import six; print(six.__version__)"],
                         capture_output=True, text=True).stdout.strip()
    assert "python-dateutil==2.9.0.post0" in recorded["all"] and f"six=={six}" in recorded["all"]
    assert recorded["direct"] == [f"six=={six}"]  # the pin's own dependency, as resolved; the pin left out
    os.remove(os.path.join(env.root, "installed.json"))  # an env built before the file existed
    assert installed("python", env.root, ("python-dateutil==2.9.0.post0",)) == recorded
    assert os.path.exists(os.path.join(env.root, "installed.json"))


def test_a_node_env_records_its_node_modules_nested_ones_included(tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("npm is missing (apt-get install npm)")
    env = ensure_env("node", ("debug@4.3.4",), root=str(tmp_path), say=lambda _: None)
    recorded = installed("node", env.root, ("debug@4.3.4",))
    ms = json.loads((tmp_path / os.readlink(env.root) / "node_modules" / "ms" / "package.json").read_text())["version"]
    assert recorded == {"all": sorted(["debug==4.3.4", f"ms=={ms}"]), "direct": [f"ms=={ms}"]}


@pytest.mark.slow
def test_crawlee_python_1825_buggy_flagged_hung_fixed_clean_and_the_replay_line_reproduces_it(tmp_path):
    """1.6.1 skips the killed request forever and never says it is done: stopped, `liveness`, its record not
    stored because the crawl did not finish (never `lost`, which is for a crawl that finished: issue 33)."""
    out = tmp_path / "results"
    done = subprocess.run([*KILLTEST, "cases", "--only", "crawlee-python-1825", "--repeat", "1", "--aimed-only",
                           "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    releases = {r["version"]: r for r in json.loads((out / "cases.json").read_text())["cases"]
                ["crawlee-python-1825"]["releases"]}
    buggy, fixed = releases["1.6.1"], releases["1.6.2"]
    assert buggy["validity"] == "invalid" and "liveness" in buggy["got"] and "lost" not in buggy["got"]
    assert buggy["missing"] == 0
    assert fixed["validity"] == "valid" and fixed["missing"] == 0 and fixed["replay"] is None
    assert (buggy["role"], fixed["role"]) == ("buggy", "fixed")
    # --aimed-only: the aimed run only, and the row says why there is no spread set.
    assert not buggy["frequencies"].get("spread") and "--aimed-only" in buggy["spread_note"]
    assert "crawlee==1.6.1" in buggy["installed"] and "crawlee==1.6.2" in fixed["installed"]  # what ran
    assert any(d.startswith("parsel==") for d in buggy["dependencies"])  # the [parsel] extra's, as resolved
    for release in (buggy, fixed):  # provenance: when, and at which commit of this checkout
        assert time.time() - calendar.timegm(time.strptime(release["measured_at"], "%Y-%m-%dT%H:%M:%SZ")) < 900
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
        assert release["killtest_commit"].removesuffix("-dirty") == head.stdout.strip()
    assert (out / "cases.md").exists()
    # The printed line, pasted into a shell from the repository, names the env and reproduces the loss.
    line = buggy["replay"]
    assert line.startswith("PATH=") and line in done.stderr
    replay_out = tmp_path / "replay"
    pasted = subprocess.run(["bash", "-c", f"{line} --out {replay_out}"], capture_output=True, text=True, cwd=ROOT,
                            timeout=300, env={k: v for k, v in os.environ.items() if k != "NODE_PATH"})
    assert pasted.returncode == 1, pasted.stderr[-2000:]
    runs = json.loads((replay_out / "replay.json").read_text())["runs"]
    assert runs[0]["findings"] == ["liveness"] and runs[0]["not_stored_unfinished"] >= 1


def test_cases_md_shows_lines_from_the_checkout_root_only_for_results_written_inside_it():
    """The committed results/cases.md named the worktree it was measured in (/work/wt/...), a path no clone
    has; a user's results written elsewhere keep whole paths, which paste from anywhere."""
    data = read_results(RESULTS)
    name = sorted(data["cases"])[0]
    root = "/somewhere/checkout"
    for release, out in zip(data["cases"][name]["releases"][:2], (f"{root}/results/cases/x", "/tmp/elsewhere/x")):
        command = f"{root}/.venv/bin/killtest run --design {root}/scrapers/cases/x/design.toml --out {out}"
        release.update(root=root, out=out, replay=None, command=command)
    page = cases_markdown(data)
    assert "`.venv/bin/killtest run --design scrapers/cases/x/design.toml --out results/cases/x`" in page
    whole = f"{root}/.venv/bin/killtest run --design {root}/scrapers/cases/x/design.toml --out /tmp/elsewhere/x"
    assert f"`{whole}`" in page
