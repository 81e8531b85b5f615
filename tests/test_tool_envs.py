"""Envs of exact pins built on first use (issue 36): what the first use says, the one line when no
registry answers, a design's `packages`, and `killtest envs` listing and removing them.

Every test here builds into a cache of its own (XDG_CACHE_HOME in a temporary folder): the machine's
~/.cache/killtest is never read, listed or removed. The small package six stands for a real tool.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from killtest.harness.design.specfile import load_spec
from killtest.harness.errors import KilltestError
from killtest.harness.running.recorded import proxy_python
from killtest.harness.tool_envs import ABOUT, cached_envs, ensure_env

SIX = ("six==1.16.0",)


@pytest.fixture
def own_cache(tmp_path, monkeypatch) -> str:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return str(cache)


def no_registry(env: dict[str, str]) -> dict[str, str]:
    """pip pointed at a port where nothing listens, with no config file, local index or wheel folder of
    this machine's to fall back on, and one quick retry: what a first use meets with no registry reachable."""
    env = {k: v for k, v in env.items() if k not in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX")}
    env.update(PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_CONFIG_FILE=os.devnull, PIP_RETRIES="1",
               PIP_TIMEOUT="5")
    return env


def killtest(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "killtest", *args], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.mark.slow  # builds a venv (pip from the registry)
def test_the_first_use_says_what_it_installs_where_and_how_long_it_took(own_cache):
    said: list[str] = []
    env = ensure_env("python", SIX, kind="tools", say=said.append)
    assert env.root.startswith(os.path.join(own_cache, "killtest", "tools"))
    assert len(said) == 2, said
    assert "first use, installing six==1.16.0" in said[0] and env.root in said[0]
    assert said[1].startswith(f"env tools/{os.path.basename(env.root)}: ready in ") and "six==1.16.0" in said[1]
    about = json.loads(open(os.path.join(env.root, ABOUT)).read())
    assert about["packages"] == list(SIX) and about["kind"] == "tools" and about["build_s"] >= 0
    assert ensure_env("python", SIX, kind="tools", say=pytest.fail) == env  # cached: nothing said


@pytest.mark.slow  # builds a venv (pip from the registry)
def test_with_no_registry_the_proxy_env_fails_in_one_line_naming_the_package_and_the_cache(own_cache, monkeypatch):
    for name, value in no_registry(dict(os.environ)).items():
        monkeypatch.setenv(name, value)
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(KilltestError) as error:
        proxy_python(say=lambda _: None)
    message = str(error.value)
    assert "\n" not in message and "mitmproxy==" in message, message
    assert "the package registry did not answer ([Errno 111] Connection refused)" in message, message
    assert os.path.join(own_cache, "killtest", "tools") in message
    assert os.listdir(os.path.join(own_cache, "killtest", "tools")) == []  # nothing half-built is left


@pytest.mark.slow  # builds a venv (pip from the registry)
def test_a_design_that_names_packages_runs_them_from_their_env_and_says_so_offline(tmp_path, own_cache):
    spec = tmp_path / "design.toml"
    spec.write_text('[design]\nname = "six-user"\npackages = ["six==1.16.0"]\n'
                    'command = ["{python}", "-c", "import six"]\n'
                    '[store]\nkind = "jsonl"\npath = "{work_dir}/out.jsonl"\n')
    # No registry: `killtest run` stops before any run, with one line, exit 2.
    ran = killtest("run", "--design", str(spec), "--runs", "1", "--kills", "0", env=no_registry(dict(os.environ)))
    assert ran.returncode == 2, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert "six==1.16.0" in lines[-1] and os.path.join(own_cache, "killtest", "designs") in lines[-1], ran.stderr
    assert "Traceback" not in ran.stderr
    # With the registry: {python} is the env's interpreter, not killtest's.
    design = load_spec(str(spec))
    python = design.python
    assert python != sys.executable and python.startswith(os.path.join(own_cache, "killtest", "designs"))
    assert subprocess.run([python, "-c", "import six"]).returncode == 0
    assert [e.packages for e in cached_envs()] == [SIX]


@pytest.mark.parametrize("packages, module", [('["six"]', False), ('["six>=1"]', False), ('["six==1.16.0"]', True)])
def test_packages_must_be_exact_pins_of_a_command_design(tmp_path, packages, module):
    program = 'module = "mine"' if module else 'command = ["{python}", "x.py"]'
    spec = tmp_path / "design.toml"
    spec.write_text(f'[design]\nname = "d"\n{program}\npackages = {packages}\n[store]\nkind = "jsonl"\npath = "x"\n')
    with pytest.raises(KilltestError) as error:
        load_spec(str(spec))
    assert f"{spec}:4:" in str(error.value) and "exactly" in str(error.value)


@pytest.mark.slow  # builds a venv (pip from the registry)
def test_killtest_envs_lists_the_cached_envs_with_their_size_and_removes_them(own_cache):
    env = dict(os.environ)
    assert "no cached envs in " + os.path.join(own_cache, "killtest") in killtest("envs", env=env).stderr
    tools = ensure_env("python", SIX, kind="tools", say=lambda _: None)
    designs = ensure_env("python", SIX, kind="designs", say=lambda _: None)
    listed = killtest("envs", env=env)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stderr.strip().splitlines()
    for built in (tools, designs):
        label = f"{os.path.basename(os.path.dirname(built.root))}/{os.path.basename(built.root)}"
        line = next(line for line in lines if line.startswith(label))
        assert " MB " in line and "six==1.16.0" in line
        # uv hard-links its cache's files into the env: removing the env does not free them, and the line says so
        assert "MB of it shared with uv's cache)" in line, line
    assert lines[-1].startswith("2 env(s), ") and "of it shared with uv's cache: freed once both are removed" \
        in lines[-1], lines[-1]
    bad = killtest("envs", "--remove", "nothing-like-it", env=env)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "nothing-like-it" in bad.stderr
    assert killtest("envs", "--remove", "tools", env=env).returncode == 0
    assert not os.path.exists(tools.root) and os.path.isdir(designs.root)
    assert not os.listdir(os.path.dirname(tools.root))  # the link and its folder
    assert killtest("envs", "--remove-all", env=env).returncode == 0
    assert cached_envs() == []


def test_a_build_killed_midway_is_listed_and_removed_and_one_still_building_is_left_alone(own_cache):
    """A SIGKILLed install leaves its folder (no link names it); the next build of that env removes it, but an env
    never built again kept it unseen. `killtest envs` lists it and --remove-all takes it; a build whose killtest
    is alive is another process's work in progress and stays."""
    env = dict(os.environ)
    root = os.path.join(own_cache, "killtest", "cases")
    os.makedirs(root)
    dead = subprocess.Popen(["true"])  # a pid whose process has ended
    dead.wait()
    killed, building = os.path.join(root, "0123456789abcdef.1-1"), os.path.join(root, "fedcba9876543210.2-2")
    for folder, pid in ((killed, dead.pid), (building, os.getpid())):
        os.makedirs(os.path.join(folder, "lib"))
        with open(os.path.join(folder, ".builder"), "w") as out:
            out.write(str(pid))
        with open(os.path.join(folder, "lib", "half.py"), "w") as out:
            out.write("x" * 5000)
    listed = killtest("envs", env=env)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stderr.strip().splitlines()
    [line] = [line for line in lines if "0123456789abcdef" in line]
    assert line.startswith("cases/0123456789abcdef.1-1") and "never finished" in line and "interrupted build" in line
    assert not [line for line in lines if "fedcba9876543210" in line]  # its builder (this test) is alive
    assert killtest("envs", "--remove-all", env=env).returncode == 0
    assert not os.path.exists(killed) and os.path.isdir(building)
