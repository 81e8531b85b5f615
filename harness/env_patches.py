"""A candidate fix applied to an env's installed packages: `patch -p1` in its node_modules or site-packages.

A case release may name a patch kept in its case folder (case.toml's `patch = "fix/<name>.dist.patch"`:
harness/design/case_spec.py), written against the published files as they are installed, paths from the
package folder (`a/@crawlee/memory-storage/...`, `a/scrapy/...`). The patched env is its own env: its cache
key is the pins' key and the patch's content hashed together (`patched_hash`), so the published env of the
same pins stays as it was, and an edited patch builds a new env. The patch is applied once, after the install
and before the env is named (harness/tool_envs.py), so a run never sees a half-patched framework. It is tried
first (`--dry-run`): a patch that does not apply is one line naming the file and the hunk that failed, and
nothing is changed.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess

from killtest.harness.errors import KilltestError

_FAILED = re.compile(r"^Hunk #(?P<hunk>\d+) FAILED at (?P<line>\d+)")
_FILE = re.compile(r"^(?:patching|checking) file (?P<file>.+)$")


def patch_digest(patch: str) -> str:
    """The sha256 of the patch file's bytes (what the env was patched with, kept in its killtest-env.json)."""
    try:
        with open(patch, "rb") as src:
            return hashlib.sha256(src.read()).hexdigest()
    except OSError as error:
        raise KilltestError(f"cannot read the patch {shown(patch)}: {error.strerror}") from None


def patched_hash(digest: str, patch: str) -> str:
    """The cache key of the env of `digest`'s pins with `patch` applied: never the published env's."""
    return hashlib.sha256(f"{digest}+patch:{patch_digest(patch)}".encode()).hexdigest()[:16]


def package_dir(runtime: str, folder: str) -> str:
    """Where an env's packages are installed: node_modules (npm) or the venv's site-packages (pip)."""
    if runtime == "node":
        return os.path.join(folder, "node_modules")
    found = sorted(glob.glob(os.path.join(folder, "lib", "python*", "site-packages")))
    if not found:
        raise KilltestError(f"no site-packages in the env {folder} to apply a patch to")
    return found[0]


def apply_patch(runtime: str, folder: str, patch: str) -> None:
    """Apply `patch` (-p1) to the packages installed in the env being built at `folder`; a patch that does not
    apply is a one-line KilltestError naming the patch, the file and the failed hunk, with nothing changed."""
    if shutil.which("patch") is None:
        raise KilltestError(f"applying {shown(patch)} needs `patch`, which is not installed (apt-get install patch)")
    where = package_dir(runtime, folder)
    base = ["patch", "-p1", "--forward", "--batch", "--no-backup-if-mismatch", "-d", where,
            "-i", os.path.abspath(patch)]
    tried = subprocess.run([*base, "--dry-run"], capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    if tried.returncode != 0:
        why = _failure(tried.stdout + tried.stderr)
        raise KilltestError(f"{shown(patch)} does not apply to the installed packages: {why}")
    done = subprocess.run(base, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0:  # it applied on the dry run: only a file system failing gets here
        raise KilltestError(f"{shown(patch)}: patch failed: {_failure(done.stdout + done.stderr)}")


def _failure(output: str) -> str:
    """`@crawlee/memory-storage/.../fs-utils.js: hunk #1 FAILED at 35` from patch's output (its first failure),
    else its last line."""
    file = ""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        named = _FILE.match(line)
        if named:
            file = named["file"].strip("'\"")
        failed = _FAILED.match(line)
        if failed:
            return f"{file or 'a file'}: hunk #{failed['hunk']} FAILED at line {failed['line']}"
        if "can't find file to patch" in line or "No file to patch" in line:
            return f"{file or 'a file it names'}: no such file in the env (is it -p1 from the package folder?)"
        if "Reversed (or previously applied) patch detected" in line:
            return f"{file}: the change is there already (a reversed or previously applied patch)"
    return lines[-1] if lines else "patch failed"


def shown(path: str) -> str:
    """A patch's path as a user reads it: relative to the current directory when under it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
