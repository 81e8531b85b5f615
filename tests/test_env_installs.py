"""Which installer fills a pinned env (harness/env_installs.py): uv where every pip setting in effect is one uv is
told as well, pip otherwise and wherever uv fails; the same releases either way, and the env says which did it.

The builds go into caches of their own (a `root`, and uv's and pip's caches under XDG_CACHE_HOME in a temporary
folder). The small packages six and python-dateutil stand for a framework.
"""

from __future__ import annotations

import difflib
import json
import os

import pytest

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


@pytest.mark.slow  # three venvs from the registry
def test_uv_and_pip_install_the_same_releases_and_the_env_says_which_did_it(own_caches, monkeypatch):
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
    # uv fails (its cache cannot be made): pip installs the same pins.
    monkeypatch.delenv("PIP_TRUSTED_HOST")
    blocked = os.path.join(own_caches, "not-a-folder")
    open(blocked, "w").close()
    monkeypatch.setenv("UV_CACHE_DIR", blocked)
    after_uv_failed = ensure_env("python", PINS, root=os.path.join(own_caches, "fallback"), say=lambda _: None)
    assert about(after_uv_failed)["installer"].startswith("pip "), about(after_uv_failed)
    assert resolved(after_uv_failed) == resolved(by_uv)


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
