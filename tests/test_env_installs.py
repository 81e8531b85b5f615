"""Which installer fills a pinned env (harness/env_installs.py): uv where every pip setting in effect is one uv is
told as well, pip otherwise and wherever uv fails; the same releases either way, and the env says which did it.

The builds go into caches of their own (a `root`, and uv's and pip's caches under XDG_CACHE_HOME in a temporary
folder). The small packages six and python-dateutil stand for a framework.
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import zipfile

import psutil
import pytest

from killtest.harness.env_builds import builder_alive
from killtest.harness.env_installs import translate, uv_binary
from killtest.harness.tool_envs import ABOUT, ensure_env

PINS = ("six==1.16.0", "python-dateutil==2.9.0.post0")

# `pip config list` as this machine kind prints it: two config files' global sections, then PIP_* variables.
MACHINE = """\
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.default-timeout='180'
:env:.disable-pip-version-check='1'
:env:.find-links='/opt/wheels'
"""


def test_the_machines_pip_settings_become_uvs_flags_and_variables():
    flags, variables = translate(MACHINE)
    assert flags == ["--constraints", "/etc/xdg/pip/constraints.txt",
                     "--extra-index-url", "file:///opt/pypi/simple", "--extra-index-url", "file:///opt/pypi-more/simple",
                     "--find-links", "/opt/wheels"]
    assert variables == {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "UV_HTTP_TIMEOUT": "180"}


def test_pips_precedence_holds_a_variable_over_the_install_section_over_global():
    listed = ("install.index-url='https://install.example/simple'\n"  # in any order: the stronger first here
              "global.index-url='https://global.example/simple'\n"
              "download.index-url='https://download.example/simple'\n"  # another command's section: not an install's
              ":env:.find-links='/from-the-variable'\n"
              "global.find-links='/global'\n"
              "install.no-index='false'\n")
    flags, _ = translate(listed)
    assert flags == ["--find-links", "/from-the-variable", "--default-index", "https://install.example/simple"]
    # Two names of one option, and an empty value, which pip skips (the value below it stands).
    assert translate(":env:.default-timeout='180'\nglobal.timeout='5'\n") == ([], {"UV_HTTP_TIMEOUT": "180"})
    assert translate(":env:.index-url=''\nglobal.index-url='https://global.example/simple'\n:env:.cert=''\n") \
        == (["--default-index", "https://global.example/simple"], {})
    assert translate(":env:.no-index='1'\n") == (["--no-index"], {})
    assert translate("") == ([], {})


@pytest.mark.parametrize("setting", ["global.trusted-host='mirror.internal'", ":env:.proxy='http://10.0.0.1:3128'",
                                     ":env:.retries='1'", "install.pre='true'", "global.only-binary=':all:'",
                                     "install.no-binary='lxml'", "global.use-feature='truststore'"])
def test_a_setting_uv_is_not_told_leaves_the_install_to_pip(setting):
    assert translate(MACHINE + setting + "\n") is None


@pytest.fixture
def own_caches(tmp_path, monkeypatch) -> str:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # uv's and pip's caches, empty
    monkeypatch.delenv("UV_CACHE_DIR", raising=False)
    return str(tmp_path)


def about(env) -> dict:
    with open(os.path.join(env.root, ABOUT), encoding="utf-8") as src:
        return json.load(src)


def resolved(env) -> dict:
    with open(os.path.join(env.root, "installed.json"), encoding="utf-8") as src:
        return json.load(src)


@pytest.mark.slow  # two venvs from the registry
def test_uv_and_pip_install_the_same_releases_from_the_registry_and_the_env_says_which_did_it(own_caches,
                                                                                              monkeypatch):
    assert uv_binary() is not None, "killtest's environment has no uv (pyproject.toml's `envs` extra)"
    said: list[str] = []
    by_uv = ensure_env("python", PINS, root=os.path.join(own_caches, "uv"), say=said.append)
    assert about(by_uv)["installer"].startswith("uv "), about(by_uv)
    assert f"by {about(by_uv)['installer']}" in said[-1], said
    # A setting pip would use and uv is not told: pip installs, as it always did.
    monkeypatch.setenv("PIP_TRUSTED_HOST", "127.0.0.1")
    by_pip = ensure_env("python", PINS, root=os.path.join(own_caches, "pip"), say=lambda _: None)
    assert about(by_pip)["installer"].startswith("pip "), about(by_pip)
    assert resolved(by_uv) == resolved(by_pip) and "six==1.16.0" in resolved(by_uv)["all"]


def wheel(folder: str, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """A real wheel of an empty package, as a build backend writes one (METADATA, WHEEL, RECORD with hashes)."""
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    files = {f"{module}/__init__.py": f"VERSION = {version!r}\n",
             f"{info}/METADATA": "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"
             + "".join(f"Requires-Dist: {each}\n" for each in requires),
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: killtest-tests\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}

    def digest(text: str) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()

    record = "".join(f"{path},sha256={digest(text)},{len(text.encode())}\n" for path, text in files.items()) \
        + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(os.path.join(folder, f"{module}-{version}-py3-none-any.whl"), "w") as out:
        for path, text in {**files, f"{info}/RECORD": record}.items():
            out.writestr(path, text)


@pytest.fixture
def wheel_folder(own_caches, monkeypatch) -> str:
    """pip told only of a folder of wheels (no index, no config file) and a constraints file: a machine whose pip
    works offline. kt-tiny-a needs kt-tiny-b, of which the folder holds 1.0 and 2.0; the constraints say 1.0. And a
    user's own UV_* setting that would stop uv (hashes required of pins that name none), which uv must not be given."""
    folder = os.path.join(own_caches, "wheels")
    os.makedirs(folder)
    wheel(folder, "kt-tiny-a", "1.0", ("kt-tiny-b",))
    wheel(folder, "kt-tiny-b", "1.0")
    wheel(folder, "kt-tiny-b", "2.0")
    constraints = os.path.join(own_caches, "constraints.txt")
    with open(constraints, "w", encoding="utf-8") as out:
        out.write("kt-tiny-b==1.0\n")
    for name in [name for name in os.environ if name.startswith("PIP_") and name not in ("PIP_CERT",)]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_FIND_LINKS", folder)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_CONSTRAINT", constraints)
    monkeypatch.setenv("UV_REQUIRE_HASHES", "1")
    return constraints


def test_uv_is_told_pips_wheel_folder_no_index_and_constraints_and_none_of_the_users_uv_settings(own_caches,
                                                                                              wheel_folder):
    env = ensure_env("python", ("kt-tiny-a==1.0",), root=os.path.join(own_caches, "envs"), say=lambda _: None)
    assert about(env)["installer"].startswith("uv ") and "after" not in about(env)["installer"], about(env)
    assert resolved(env)["all"] == ["kt-tiny-a==1.0", "kt-tiny-b==1.0"]


def test_a_constraints_file_with_an_option_line_is_pips_to_read(own_caches, wheel_folder):
    with open(wheel_folder, "w", encoding="utf-8") as out:
        out.write("--pre\nkt-tiny-b==1.0\n")
    env = ensure_env("python", ("kt-tiny-a==1.0",), root=os.path.join(own_caches, "envs"), say=lambda _: None)
    assert about(env)["installer"].startswith("pip ") and "after" not in about(env)["installer"], about(env)
    assert resolved(env)["all"] == ["kt-tiny-a==1.0", "kt-tiny-b==1.0"]


def test_where_uv_fails_pip_installs_the_same_pins_into_an_emptied_env_and_says_after_what(own_caches, wheel_folder,
                                                                                           monkeypatch):
    blocked = os.path.join(own_caches, "not-a-folder")  # uv's cache cannot be made
    open(blocked, "w").close()
    monkeypatch.setenv("UV_CACHE_DIR", blocked)
    said: list[str] = []
    env = ensure_env("python", ("kt-tiny-a==1.0",), root=os.path.join(own_caches, "envs"), say=said.append)
    installer = about(env)["installer"]
    assert installer.startswith("pip ") and "(after uv pip install kt-tiny-a==1.0 failed: " in installer, installer
    assert "\n" not in installer and installer in said[-1]
    assert resolved(env)["all"] == ["kt-tiny-a==1.0", "kt-tiny-b==1.0"]


@pytest.mark.slow  # two venvs from the registry
def test_a_candidate_fix_to_a_uv_env_leaves_uvs_cache_and_the_published_env_as_they_were(own_caches):
    root = os.path.join(own_caches, "envs")
    published = ensure_env("python", ("six==1.16.0",), root=root, say=lambda _: None)
    assert about(published)["installer"].startswith("uv ")
    site = next(os.path.join(published.root, "lib", name, "site-packages")
                for name in os.listdir(os.path.join(published.root, "lib")))
    with open(os.path.join(site, "six.py"), encoding="utf-8") as src:
        before = src.read()
    assert os.stat(os.path.join(site, "six.py")).st_nlink > 1  # a hard link into uv's cache
    after = before.replace('__version__ = "1.16.0"', '__version__ = "1.16.0+fix"')
    patch = os.path.join(own_caches, "fix.dist.patch")
    with open(patch, "w", encoding="utf-8") as out:
        out.writelines(difflib.unified_diff(before.splitlines(True), after.splitlines(True), "a/six.py", "b/six.py"))
    fixed = ensure_env("python", ("six==1.16.0",), root=root, say=lambda _: None, patch=patch)
    again = ensure_env("python", ("six==1.16.0",), root=os.path.join(own_caches, "again"), say=lambda _: None)
    versions = {}
    for env in (published, fixed, again):
        folder = os.path.join(env.root, "lib", os.listdir(os.path.join(env.root, "lib"))[0], "site-packages")
        with open(os.path.join(folder, "six.py"), encoding="utf-8") as src:
            versions[env.root] = src.read() == after
    assert versions == {published.root: False, fixed.root: True, again.root: False}


@pytest.fixture
def silent_index(monkeypatch) -> str:
    """pip's only index a port that takes connections and never answers: an install that hangs, as behind a
    stalled mirror. No config file, wheel folder or user's UV_* setting of this machine's."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    for name in [name for name in os.environ if name.startswith(("PIP_", "UV_")) and name != "PIP_CERT"]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{listener.getsockname()[1]}/simple")
    monkeypatch.setenv("PIP_DEFAULT_TIMEOUT", "120")
    yield listener.getsockname()[1]
    listener.close()


def words(process: psutil.Process) -> str:
    """A process's command line, or nothing for one that has just ended (the venv step, say)."""
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def test_a_builder_sigkilled_mid_install_leaves_no_installer_running_and_its_folder_to_the_next(tmp_path,
                                                                                                silent_index):
    root = str(tmp_path / "envs")
    code = f"from killtest.harness.tool_envs import ensure_env; ensure_env('python', ('six==1.16.0',), root={root!r})"
    builder = psutil.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    installer = None
    try:
        deadline = time.monotonic() + 30
        while installer is None and time.monotonic() < deadline:  # uv's or pip's install, waiting on the index
            installer = next((child for child in builder.children(recursive=True) if "install" in words(child)), None)
            time.sleep(0.05)
        assert installer is not None, "no install step started"
        builder.kill()
        builder.wait()
        gone, alive = psutil.wait_procs([installer], timeout=10)
        assert not alive, f"the installer outlived killtest: {installer.cmdline()}"
        # Nor does anything it started, which inherits the folder's lock too and may end a few milliseconds after it
        # (seen under load): within seconds the folder has no builder and no lock, an interrupted build, which the
        # next build removes.
        folder = os.path.join(root, os.listdir(root)[0])
        while builder_alive(folder) and time.monotonic() < deadline + 10:
            time.sleep(0.05)
    finally:  # nothing of a failed test left behind either
        for process in [*(builder.children(recursive=True) if builder.is_running() else []), installer, builder]:
            with contextlib.suppress(psutil.NoSuchProcess, AttributeError):
                process.kill()
    assert [builder_alive(os.path.join(root, name)) for name in os.listdir(root)] == [False]
