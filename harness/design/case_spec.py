"""A case: a real framework at pinned releases, its design and what each release must show (case.toml).

The format is docs/explanation/analyses.md's and notes' CASES.md: a folder scrapers/cases/<name>/ with a
`case.toml` ([case] and one [[release]] per version), the design spec and the scraper. This module only
reads and checks the file; a mistake is one line naming the file and the key. Which finding codes exist
is the checker's business: the caller passes them in (the design room does not import check/).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass

from killtest.harness.design.registry import BUILT_IN_FOLDER
from killtest.harness.errors import KilltestError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 takes the same parser from PyPI
    import tomli as tomllib

CASES_FOLDER = os.path.join(BUILT_IN_FOLDER, "cases")
RUNTIMES = ("python", "node")
STATUSES = ("fixed", "open", "clean")
# What a release is in its case (the analyses page's label). A release expecting findings is `buggy` (a
# bug upstream reported), `documented limitation` (what the framework's own docs or maintainers say it
# does: BullMQ's at-least-once, the duplicates apify-sdk-python#1103 leaves to a hard kill) or
# `unreported` (a loss no upstream issue reports as such; its README says what is known and what is not).
# A clean one is `fixed` (after the fix), `before the bug` (a clean release older than the bug: not a
# fix), `clean twin` (another design on a buggy version) or `control` (a clean case). Inferred unless given.
# A release whose `patch` (a candidate fix kept in the case folder, fix/<name>.dist.patch) is applied to its
# installed framework is a `candidate fix`: the same pins, patched, explored again to show the fix holds.
FLAGGED_ROLES = ("buggy", "documented limitation", "unreported")
CANDIDATE_FIX = "candidate fix"
ROLES = (*FLAGGED_ROLES, "fixed", "before the bug", "clean twin", "control", CANDIDATE_FIX)
# Every key of a case.toml, with what it means (docs/reference/cases.md is generated from these).
CASE_KEYS = {
    "title": "the case's one-line claim, as the analyses page heads it",
    "framework": "the framework's name (crawlee, scrapy, ...)",
    "upstream": "the upstream issues or pull requests the case is about: their URLs, at least one",
    "status": f"one of {', '.join(STATUSES)}: a fixed case has a buggy and a fixed release; a clean one, no finding",
    "runtime": f"one of {', '.join(RUNTIMES)}: how its releases' envs are built (pip or npm)",
    "design": "the design spec its releases run, in the case folder (default design.toml)",
    "args": "the `killtest run` options of every release's runs (not --design, --out, --name: the runner's)",
    "repeat": "at most this many runs a set (default: the command's --repeat)",
    "spread_kills": "SIGKILLs in each spread-kill run (0: no spread set); needs spread_note",
    "spread_note": "why the case has fewer spread kills, or none (the page prints it)",
    "expect_share": "of the aimed runs, the share that must show `expect` (default 1: every one)",
}
RELEASE_KEYS = {
    "version": "the framework's version, the release's name (its key, with a label: 3.18.1-patched)",
    "packages": "exact pins installed in the release's env: pip's name==1.2.3 or npm's name@1.2.3",
    "expect": "the finding codes its runs must show ([] : the verdict must be valid)",
    "design": "another design spec for this release (a twin), in the case folder",
    "label": "tells a twin on the same version apart (its key: <version>-<label>); a patched release's says `patched`",
    "role": f"one of {', '.join(ROLES)}; inferred when left out",
    "patch": "a candidate fix kept in the case folder (fix/<name>.dist.patch), applied with `patch -p1` to the"
             " env's node_modules or site-packages after the install, in an env of its own (its key hashes the"
             " patch too); the release is a `candidate fix`, its label `patched` unless given; a patch that does not"
             " apply is one line naming the file and the hunk",
}
# Options the runner sets itself for every release: a case's `args` may not.
RUNNER_OPTIONS = ("--design", "--out", "--name")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
# An exact pin: pip's `name[extras]==1.2.3`, npm's `name@1.2.3` or `@scope/name@1.2.3`.
_PIP_PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?==[A-Za-z0-9.+!-]+$")
_NPM_PIN = re.compile(r"^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*@\d+\.\d+\.\d+[A-Za-z0-9.+-]*$")


@dataclass(frozen=True)
class Release:
    """One version of the framework: its pinned packages, the finding codes it must show, its design."""

    version: str
    packages: tuple[str, ...]
    expect: tuple[str, ...]  # () = the verdict must be valid
    design: str  # absolute path of the design spec this release runs
    label: str = ""  # tells a twin (another design on the same version) apart
    role: str = ""  # one of ROLES
    patch: str = ""  # absolute path of the patch applied to the installed packages (a candidate fix), or ""

    @property
    def key(self) -> str:
        """The release's folder name under results/cases/<case>/: the version, and the twin's label (a patched
        release's says `patched`: 3.18.1-patched)."""
        return self.version + (f"-{_slug(self.label)}" if self.label else "")


@dataclass(frozen=True)
class Case:
    name: str
    folder: str
    title: str
    framework: str
    upstream: tuple[str, ...]
    status: str
    runtime: str
    args: tuple[str, ...]
    releases: tuple[Release, ...]
    # How often each release runs (campaigns/case_runs.py): at most `repeat` runs a set (None: the command's
    # --repeat); `spread_kills` SIGKILLs in each spread-kill run (None: killtest's default; 0: no spread set),
    # with `spread_note` saying why when set (such a case's spread runs keep its --time-limit, which killtest
    # measures for the others); `expect_share`: of the aimed runs, the share that must show the
    # expected findings (1.0: every one).
    repeat: int | None = None
    spread_kills: int | None = None
    spread_note: str = ""
    expect_share: float = 1.0


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _patch(folder: str, value: object, key: str, fail: Callable[[str, str], KilltestError]) -> str:
    """A release's `patch`: a file in the case folder (fix/<name>.dist.patch), as an absolute path; "" for none."""
    if value == "":
        return ""
    if not isinstance(value, str) or os.path.isabs(value) or value.startswith(".."):
        raise fail(key, f"a patch file in the case folder is expected (fix/<name>.dist.patch), not {value!r}")
    path = os.path.join(os.path.abspath(folder), value)
    if not os.path.isfile(path):
        raise fail(key, f"no patch at {os.path.relpath(path)}")
    return path


def _role(status: str, expect: tuple[str, ...], before: list[Release]) -> str:
    """A release's role when case.toml does not say: a clean release of a fixed case listed before its
    first buggy one predates the bug; after it, it has the fix."""
    if expect:
        return "buggy"
    if status == "fixed":
        return "fixed" if any(r.expect for r in before) else "before the bug"
    return "control" if status == "clean" else "clean twin"


def case_folders(root: str = CASES_FOLDER) -> list[str]:
    """Every folder under `root` holding a case.toml, by name."""
    if not os.path.isdir(root):
        return []
    return sorted(os.path.join(root, n) for n in os.listdir(root) if os.path.isfile(os.path.join(root, n, "case.toml")))


def load_cases(root: str = CASES_FOLDER, only: Collection[str] = (), codes: Collection[str] = ()) -> list[Case]:
    """The cases under `root` (just `only`, when given), each checked; an unknown name is a one-line error."""
    cases = [load_case(folder, codes) for folder in case_folders(root)]
    unknown = sorted(set(only) - {case.name for case in cases})
    if unknown:
        raise KilltestError(f"no case named {', '.join(unknown)}; the cases are:"
                            f" {', '.join(case.name for case in cases) or 'none'}")
    return [case for case in cases if not only or case.name in only]


def load_case(folder: str, codes: Collection[str] = ()) -> Case:
    """One case folder's case.toml, checked; `codes` (when given) are the finding codes `expect` may name."""
    path = os.path.join(folder, "case.toml")
    where = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path
    try:
        with open(path, "rb") as src:
            data = tomllib.loads(src.read().decode("utf-8"))
    except OSError as error:
        raise KilltestError(f"cannot read {where}: {error.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise KilltestError(f"{where}: not valid TOML: {error}") from None

    def fail(key: str, message: str) -> KilltestError:
        return KilltestError(f"{where}: {key}: {message}")

    name = os.path.basename(os.path.normpath(folder))
    if not _NAME.match(name):
        raise fail("folder", f"a case folder is named in kebab-case (e.g. crawlee-python-1825), not {name!r}")
    extra = set(data) - {"case", "release"}
    if extra:
        raise fail(sorted(extra)[0], "unknown table; a case.toml holds [case] and [[release]] tables")
    case = data.get("case")
    if not isinstance(case, dict):
        raise fail("[case]", "missing: the table with title, framework, upstream, status, runtime, args")
    known = set(CASE_KEYS)
    for key in case:
        if key not in known:
            raise fail(f"case.{key}", f"unknown key; [case] may hold {', '.join(sorted(known))}")

    def text(table: dict, key: str, prefix: str, default: str | None = None) -> str:
        value = table.get(key, default)
        if not isinstance(value, str) or not value.strip():
            raise fail(f"{prefix}.{key}", "missing or empty: a string is expected" if value is None
                       else f"a non-empty string is expected, not {value!r}")
        return value

    def strings(table: dict, key: str, prefix: str, default: list | None = None) -> tuple[str, ...]:
        value = table.get(key, default)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise fail(f"{prefix}.{key}", "missing: a list of strings is expected" if value is None
                       else f"a list of strings is expected, not {value!r}")
        return tuple(value)

    status = text(case, "status", "case")
    if status not in STATUSES:
        raise fail("case.status", f"one of {', '.join(STATUSES)}, not {status!r}")
    runtime = text(case, "runtime", "case")
    if runtime not in RUNTIMES:
        raise fail("case.runtime", f"one of {', '.join(RUNTIMES)}, not {runtime!r}")
    args = strings(case, "args", "case", [])
    for word in args:
        if word.split("=")[0] in RUNNER_OPTIONS:
            raise fail("case.args", f"{word.split('=')[0]} is set by the runner for every release; leave it out")
    upstream = strings(case, "upstream", "case")
    if not upstream:
        raise fail("case.upstream", "name at least one upstream issue or pull request (its URL)")
    default_design = text(case, "design", "case", "design.toml")
    for key, least in (("repeat", 1), ("spread_kills", 0)):
        if key in case and (not isinstance(case[key], int) or isinstance(case[key], bool) or case[key] < least):
            raise fail(f"case.{key}", f"a whole number of at least {least} is expected, not {case[key]!r}")
    if "spread_kills" in case and not str(case.get("spread_note", "")).strip():
        raise fail("case.spread_note", "say why the case has fewer spread kills (or none): the page prints it")
    share = case.get("expect_share", 1.0)
    if not isinstance(share, (int, float)) or isinstance(share, bool) or not 0 < share <= 1:
        raise fail("case.expect_share", f"a share of the aimed runs, above 0 and at most 1, not {share!r}")

    rows = data.get("release")
    if not isinstance(rows, list) or not rows:
        raise fail("[[release]]", "missing: one [[release]] table per version, with version, packages, expect")
    releases: list[Release] = []
    for i, row in enumerate(rows, 1):
        prefix = f"release {i}"
        if not isinstance(row, dict):
            raise fail(prefix, "a [[release]] table is expected")
        allowed = set(RELEASE_KEYS)
        for key in row:
            if key not in allowed:
                raise fail(f"{prefix}.{key}", f"unknown key; a [[release]] may hold {', '.join(sorted(allowed))}")
        version = text(row, "version", prefix)
        prefix = f"release {version}"
        packages = strings(row, "packages", prefix)
        pin = _PIP_PIN if runtime == "python" else _NPM_PIN
        for spec in packages:
            if not pin.match(spec):
                raise fail(f"{prefix}.packages", f"{spec!r} is not an exact pin (e.g. "
                           + ("'crawlee[beautifulsoup]==1.6.1')" if runtime == "python" else "'crawlee@3.5.7')"))
        if not packages:
            raise fail(f"{prefix}.packages", "name at least one pinned package")
        expect = strings(row, "expect", prefix)
        for code in expect:
            if codes and code not in codes:
                raise fail(f"{prefix}.expect", f"{code!r} is not a finding code (docs/reference/findings.md)")
        design = os.path.join(os.path.abspath(folder), text(row, "design", prefix, default_design))
        if not os.path.isfile(design):
            raise fail(f"{prefix}.design", f"no design spec at {os.path.relpath(design)}")
        label = row.get("label", "")
        if not isinstance(label, str):
            raise fail(f"{prefix}.label", f"a string is expected, not {label!r}")
        patch = _patch(folder, row.get("patch", ""), f"{prefix}.patch", fail)
        if patch and not label:
            label = "patched"  # its key says so: 3.18.1-patched, beside the published 3.18.1
        elif patch and "patched" not in _slug(label):
            raise fail(f"{prefix}.label", f"a patched release's label says so (e.g. 'patched'), not {label!r}")
        role = row.get("role", "") or (CANDIDATE_FIX if patch else "")
        if role and (role not in ROLES or (role in FLAGGED_ROLES) != bool(expect)):
            raise fail(f"{prefix}.role", f"one of {', '.join(ROLES)} ({', '.join(FLAGGED_ROLES)} exactly when"
                       f" expect names findings), not {role!r}")
        if (role == CANDIDATE_FIX) != bool(patch):
            raise fail(f"{prefix}.role", f"a release with a `patch` is a {CANDIDATE_FIX!r}, not {role!r}" if patch
                       else f"{CANDIDATE_FIX!r} is the role of a release with a `patch` (fix/<name>.dist.patch)")
        releases.append(Release(version, packages, expect, design, label, role or _role(status, expect, releases),
                                patch))
    keys = [r.key for r in releases]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise fail("[[release]]", f"{twice[0]} appears twice; give a twin release a `label`")
    if status == "clean" and any(r.expect for r in releases):
        raise fail("case.status", "a clean case expects no finding on any release (expect = [])")
    if status == "fixed" and (all(r.expect for r in releases) or not any(r.expect for r in releases)):
        raise fail("case.status", "a fixed case has a buggy release (expect names findings) and a fixed one"
                   " (expect = [])")
    return Case(name=name, folder=os.path.abspath(folder), title=text(case, "title", "case"),
                framework=text(case, "framework", "case"), upstream=upstream, status=status, runtime=runtime,
                args=args, releases=tuple(releases), repeat=case.get("repeat"),
                spread_kills=case.get("spread_kills"), spread_note=str(case.get("spread_note", "")).strip(),
                expect_share=float(share))
