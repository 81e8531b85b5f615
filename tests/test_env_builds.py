"""Builders of pinned envs take turns one env at a time (harness/env_builds.py): a process that wants an env another
process is building waits for that build and takes it, one that wants another env builds it meanwhile, and each
build, wait and failure is a line of KILLTEST_ENV_LOG for CI's phase table.

The build in progress is a real process holding its build folder's lock (as a builder does while pip runs); the
env it "finishes" is a folder with its link swapped in, as tool_envs.py leaves one. A waiter is seen blocked in
the kernel's lock table (/proc/locks) before the build finishes, so what is tested does not depend on timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from killtest.harness.env_builds import being_built, builder_alive
from killtest.harness.tool_envs import ensure_env, env_hash, interpreter_version

NEVER = ("killtest-no-such-package==0.0.1",)  # a build of it would fail: the waiter must never start one
CLAIM = ("import sys; from killtest.harness.env_builds import claim, kind_locked\n"
         "with kind_locked(sys.argv[1]):\n    claim(sys.argv[2])\n"
         "print('claimed', flush=True); sys.stdin.read()")


def hold_a_build(root: str, packages: tuple[str, ...]) -> tuple[subprocess.Popen, str]:
    """Another process at work on this env's build: its folder claimed and locked until its stdin closes."""
    digest = env_hash("python", packages, interpreter_version("python"))
    folder = os.path.join(root, f"{digest}.1-1")
    builder = subprocess.Popen([sys.executable, "-c", CLAIM, root, folder], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert builder.stdout.readline().strip() == "claimed"
    return builder, folder


def blocked_on_a_lock(pid: int) -> bool:
    with open("/proc/locks") as table:
        return any(line.split()[1] == "->" and line.split()[5] == str(pid) for line in table)


def events(path) -> list[dict]:
    return [json.loads(line) for line in open(path)] if os.path.exists(path) else []


def test_an_env_being_built_is_waited_for_and_taken_not_built_again(tmp_path, monkeypatch):
    log = tmp_path / "envs.jsonl"
    monkeypatch.setenv("KILLTEST_ENV_LOG", str(log))
    root = str(tmp_path / "cases")
    os.makedirs(root)
    builder, folder = hold_a_build(root, NEVER)
    link = os.path.join(root, os.path.basename(folder).split(".")[0])
    assert builder_alive(folder) and being_built(root, os.path.basename(link), link) == folder
    said: list[str] = []
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(ensure_env("python", NEVER, root=root, say=said.append)),
                              daemon=True)  # a waiter left blocked by a failure here must not hold pytest's exit
    try:
        waiter.start()
        deadline = time.monotonic() + 60
        while not blocked_on_a_lock(os.getpid()) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert blocked_on_a_lock(os.getpid()), "the waiter never waited for the build in progress"
        # The builder finishes: its env complete, the link swapped in, its lock let go.
        os.makedirs(os.path.join(folder, "bin"))
        os.symlink(os.path.basename(folder), link)
    finally:
        builder.stdin.close()
        builder.wait()
    waiter.join(timeout=60)
    assert got and got[0].root == link and said == []  # taken as built, nothing installed
    [waited] = events(log)
    assert waited["event"] == "waited" and waited["env"] == f"cases/{os.path.basename(link)}"
    assert waited["packages"] == list(NEVER) and waited["asker"].startswith("tests/test_env_builds.py::")


def test_a_builder_that_died_holds_no_lock_and_its_folder_is_not_taken_for_a_build_in_progress(tmp_path):
    root = str(tmp_path / "cases")
    os.makedirs(root)
    builder, folder = hold_a_build(root, NEVER)
    builder.kill()
    builder.wait()
    assert not builder_alive(folder)
    assert being_built(root, os.path.basename(folder).split(".")[0], "") is None


@pytest.mark.slow  # builds a venv (pip from the registry)
def test_another_env_is_built_while_one_is_being_built_and_each_build_is_logged(tmp_path, monkeypatch):
    """Until 2026-12-06 a builder locked the whole kind: a test wanting one case's env waited out CI's prebuild
    installing another one."""
    log = tmp_path / "envs.jsonl"
    monkeypatch.setenv("KILLTEST_ENV_LOG", str(log))
    root = str(tmp_path / "cases")
    os.makedirs(root)
    builder, folder = hold_a_build(root, NEVER)
    try:
        said: list[str] = []
        env = ensure_env("python", ("six==1.16.0",), root=root, say=said.append)
        assert len(said) == 2 and "first use" in said[0] and builder.poll() is None  # built beside the other
        assert subprocess.run([env.python, "-c", "import six"]).returncode == 0
    finally:
        builder.stdin.close()
        builder.wait()
    [built] = events(log)
    assert built["event"] == "built" and built["packages"] == ["six==1.16.0"] and built["seconds"] > 0
