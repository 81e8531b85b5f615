"""How a pinned env's packages get installed (harness/tool_envs.py caches the envs): uv or pip for a venv, npm for
node_modules.

uv installs a venv's pins where it installs what pip would, and pip does the rest. uv reads none of pip's
configuration, and a machine's pip configuration is often what makes an install work at all: a company mirror, a
wheel folder, a constraints file, a certificate (this machine kind's pip.conf names local wheel folders, two file
indexes and a constraints file). So pip is asked what it would use (`pip config list`, its config files and its
PIP_* variables, as pip itself merges them), and uv runs only when every setting there is one uv is told as well:
its index, extra indexes, wheel folders, constraints (files of requirement lines only: an option line in one, such
as `--pre` or `-i`, and pip installs), certificate and timeout. Among several indexes uv looks, as pip does, for
the best version of all (`unsafe-best-match`), not the first index that has the name; of one version on several
indexes it takes the first index's files where pip pools them, so the release is the same and its file may not be.
uv is given none of the user's own UV_* settings (but its cache folder): pip's are the ones that count. Any other
pip setting (a proxy, a trusted host, a retry count, --pre, --only-binary ...) and pip installs, as before; where uv
fails, the env is emptied and pip installs the same pins, and its words are the ones a failure shows
(harness/tool_envs.py's one line, `_unreachable` below).

uv is the `uv` package in killtest's own environment (pyproject.toml's `envs` extra; the repository's .venv pins
it), never a `uv` found on PATH, whose version nobody chose, and only where that environment has a pip that can
install into another interpreter (22.3 or newer), as a `pip install killtest[envs]` gives. Measured from an empty
cache on two cores: `crawlee[parsel]==1.6.1` took pip (--no-compile) 5.0 CPU-s and 6.4 s, uv 0.8 CPU-s and 1.5 s;
crawlee[parsel] 1.6.1, scrapy 2.13.4 and mitmproxy 11.0.2 in one env 5.7 CPU-s and 8.3 s against 2.3 and 2.5 s,
both resolving the same 69 releases (docs/reference/tests.md).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.metadata
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable

from killtest.harness import lifeline
from killtest.harness.errors import KilltestError

# The pip and npm flags: quiet, no version check or audit. No .pyc at install (scrapy==2.13.4 5.5 -> 2.7 CPU-s) where
# Python writes what a case imports; with PYTHONDONTWRITEBYTECODE it would compile at every start (0.26 -> 0.58 CPU-s).
_COMPILE = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
_PIP = ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input",
        *([] if _COMPILE else ["--no-compile"])]
_NPM = ["npm", "install", "--no-audit", "--no-fund", "--no-save", "--loglevel=error"]
# No browser downloads at install: a browser case drives the system's Chromium (executablePath), and a
# download (puppeteer's postinstall fetches Chrome) fails where only the registries are reachable.
_NO_BROWSER_DOWNLOAD = {"PUPPETEER_SKIP_DOWNLOAD": "1", "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"}
_ERRNO = re.compile(r"\[Errno -?\d+\] [^'\")]+")  # what urllib3 met: "[Errno 111] Connection refused"
# pip's settings uv is told as well: pip's option name -> uv's flag (a list of values each) or its variable.
_AS_FLAGS = {"index-url": "--default-index", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
             "constraint": "--constraints"}
_AS_VARIABLES = {"cert": "SSL_CERT_FILE", "timeout": "UV_HTTP_TIMEOUT"}
# Settings that change nothing an install puts in the env, or that killtest passes pip itself.
_HARMLESS = {"disable-pip-version-check", "no-input", "quiet", "progress-bar", "root-user-action", "config-file",
             "no-warn-script-location", "no-color", "no-compile", "compile"}
_SAME = {"default-timeout": "timeout", "constraints": "constraint"}  # two names of one pip option
_TRUE = {"1", "true", "t", "yes", "y", "on"}  # pip's strtobool
_KEEP_UV = {"UV_CACHE_DIR"}  # the one UV_* setting uv is left: where its cache is


def install(runtime: str, packages: tuple[str, ...], folder: str, hold: int | None = None) -> str:
    """Install `packages` into `folder` (made and locked by env_builds.claim): a venv of killtest's base Python, or
    a node_modules folder. Says which installer did it: `uv 0.13.9`, `pip 26.3` or `npm`.

    `hold`: the build folder's locked descriptor, which every install step inherits: while an installer runs, the
    folder is being built, even after killtest itself was SIGKILLed (the lock goes with the last descriptor), so
    the next build of the env waits for it instead of removing a folder an orphaned installer would write again.
    Each step leads a session of its own that the lifeline's watchdog ends if killtest dies (harness/lifeline.py):
    an npm install does not run on for a minute after a CI runner's timeout killed killtest. uv hard-links the files
    from its cache; a candidate fix (harness/env_patches.py) never writes through them, because GNU patch writes
    each patched file anew and renames it over the old one (tests/test_env_installs.py)."""
    if runtime != "python":
        if shutil.which("npm") is None:
            raise KilltestError("a node case needs `npm` on PATH")
        _step([*_NPM, "--prefix", folder, *packages], "npm install " + " ".join(packages), _NO_BROWSER_DOWNLOAD,
              hold=hold)
        return "npm"
    # From killtest's own interpreter: venv takes its base Python, so the case's venv does not nest in ours.
    python = os.path.join(folder, "bin", "python")
    own_pip = _own_pip()
    uv = uv_binary() if own_pip else None
    told = uv_settings() if uv else None
    _venv(folder, own_pip, hold)
    uv_failed = ""
    if uv and told is not None:
        flags, variables = told
        environ = {name: value for name, value in os.environ.items()
                   if not name.startswith("UV_") or name in _KEEP_UV}
        try:
            _step([uv, "pip", "install", "--quiet", "--no-progress", "--no-config", "--python", python,
                   "--index-strategy", "unsafe-best-match", *(["--compile-bytecode"] if _COMPILE else []),
                   *flags, *packages],
                  "uv pip install " + " ".join(packages), {**environ, **variables}, replace=True, hold=hold)
            return f"uv {_version('uv')}"
        except KilltestError as error:  # pip tries the same pins in an emptied env: its words show a failure
            uv_failed = f" (after {error})"
            for name in ("bin", "include", "lib", "lib64", "pyvenv.cfg"):
                path = os.path.join(folder, name)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                elif os.path.lexists(path):
                    os.remove(path)
            _venv(folder, own_pip, hold)
    if own_pip:
        _step([sys.executable, "-m", "pip", "--python", python, *_PIP[2:], *packages],
              "pip install " + " ".join(packages), hold=hold)
    else:
        _step([python, *_PIP, *packages], "pip install " + " ".join(packages), hold=hold)
    return f"pip {_version('pip')}{uv_failed}"


def _venv(folder: str, own_pip: bool, hold: int | None) -> None:
    """The env's venv, in `folder` beside its .builder file: without pip where killtest's pip fills it (ensurepip's
    install of pip cost 3 CPU-s an env)."""
    _step([sys.executable, "-m", "venv", *(["--without-pip"] if own_pip else []), folder], "python3 -m venv",
          hold=hold)


def uv_binary() -> str | None:
    """The uv of killtest's own environment (the `uv` package's binary), or None."""
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    try:
        return str(find_uv_bin())
    except (FileNotFoundError, OSError):
        return None


def uv_settings(pip_config: Callable[[], str | None] | None = None) -> tuple[list[str], dict[str, str]] | None:
    """uv's flags and variables for the settings pip would install with, or None where one of them has no
    counterpart told to uv (then pip installs). `pip_config`: what `pip config list` printed (None: pip could not
    say), for a test."""
    listed = (pip_config or _pip_config_list)()
    return None if listed is None else translate(listed)


def translate(listed: str) -> tuple[list[str], dict[str, str]] | None:
    """`pip config list`'s lines (`section.name='value'`, PIP_* variables under `:env:`) as uv's flags and
    variables; None where pip would use a setting uv is not told. pip's own precedence: a variable over the
    `install` section over `global`; other commands' sections do not apply to an install."""
    rank = {":env:": 2, "install": 1, "global": 0}
    chosen: dict[str, tuple[int, str]] = {}
    for line in listed.splitlines():
        key, _, shown = line.partition("=")
        section, _, name = key.strip().partition(".")
        if not shown or section not in rank:
            continue
        try:
            value = str(ast.literal_eval(shown.strip()))
        except (ValueError, SyntaxError):
            return None
        name = _SAME.get(name, name)
        if not value.strip():  # pip skips an empty value: the setting below it stands
            continue
        if name not in chosen or rank[section] >= chosen[name][0]:
            chosen[name] = (rank[section], value)
    flags: list[str] = []
    variables: dict[str, str] = {}
    for name, (_, value) in sorted(chosen.items()):
        if name == "constraint" and not all(_plain_requirements(path) for path in value.split()):
            return None
        if name in _AS_FLAGS:
            flags += [part for each in value.split() for part in (_AS_FLAGS[name], each)]
        elif name in _AS_VARIABLES:
            variables[_AS_VARIABLES[name]] = value
        elif name == "no-index":
            flags += ["--no-index"] if value.strip().lower() in _TRUE else []
        elif name not in _HARMLESS:
            return None
    return flags, variables


def _plain_requirements(path: str) -> bool:
    """Whether a constraints file holds requirement lines only: pip reads an option line in one (`--pre`, `-i`,
    `-c other.txt`) its own way, uv its own or not at all. A file that cannot be read is pip's to complain of."""
    try:
        with open(path, encoding="utf-8") as src:
            return not any(line.lstrip().startswith("-") for line in src)
    except (OSError, UnicodeDecodeError):
        return False


def _pip_config_list() -> str | None:
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                              check=False, stdin=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _own_pip() -> bool:
    """Whether killtest's interpreter has a pip that installs into another interpreter (`--python`, pip 22.3):
    then a new env is made without pip and filled by this one (a venv made by uv, say, has none)."""
    version = _version("pip")
    return version != "?" and tuple(int(part) for part in re.findall(r"\d+", version)[:2]) >= (22, 3)


def _step(command: list[str], what: str, env: dict[str, str] | None = None, replace: bool = False,
          hold: int | None = None) -> None:
    """Run one install step (with `env` added to the environment, or as the whole of it: `replace`; `hold`
    inherited: install's docstring); a failure is one line: the step and the tool's last line of complaint."""
    lifeline.ensure_watchdog()
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                   text=True, env=dict(env or {}) if replace else {**os.environ, **(env or {})},
                                   start_new_session=True, pass_fds=() if hold is None else (hold,))
    except OSError as error:
        raise KilltestError(f"{what}: cannot run {command[0]}: {error.strerror}") from None
    lifeline.register(process.pid)
    try:
        stdout, stderr = process.communicate()
    finally:  # interrupted (Ctrl+C reaches killtest, not a session of its own): the step ends with it
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if process.returncode != 0:
        lines = [line.strip() for line in (stderr + stdout).splitlines() if line.strip()
                 and not line.startswith("WARNING: Location")]
        complaint = next((line for line in reversed(lines) if "ERROR" in line or "ERR!" in line),
                         lines[-1] if lines else f"exit status {process.returncode}")
        raise KilltestError(f"{what} failed: {complaint}{_unreachable(lines)}")


def _unreachable(lines: list[str]) -> str:
    """pip says "No matching distribution" whether a release is missing or the registry never answered; its
    retry warnings tell the two apart, so the line says which (npm's ERR! lines name the network already)."""
    for line in lines:
        if "connection broken by" in line or "Could not fetch URL" in line:
            reason = _ERRNO.search(line)
            return f"; the package registry did not answer ({reason.group(0) if reason else 'connection failed'})"
    return ""
