"""What each file a crawler writes is, and its name as a kind of file: its store, its own state, or its
framework's log or cache; and a store-write kill that landed off its aim, in plain words.

explore aims points at every write under the work dir (harness/faults/store_writes.py), and every one is a real
crash point: a kill at crawl4ai's log write can land while its state file is truncated. But a user who reads
"store writes to N-home/.N" cannot tell that these are crawl4ai's log and robots cache. So each file is named for
what it is, by its path and the design's spec: the spec's `[store]` path (a file, the files SQLite keeps beside
it, or a folder) is the store; a log (`*.log`, `*.log.1`, a `logs/` folder) or a cache (a `cache`, `.cache` or
`robots` folder or name, compiled bytecode) is the framework's; any other file is the crawler's own state (a
progress file, a crawl_state.json, a queue). And a kind of file keeps its words: numbers and ids are folded
(`dataset/000001.json` is `dataset/N.json`, a request id `Xy7AbC12` is `N`), a word with a digit in it is not
(`crawl4ai-home/.crawl4ai` stays as it is).

Pure: paths in, words out.
"""

from __future__ import annotations

import re

from killtest.harness.check.distinct import folded, nth
from killtest.harness.faults.store_writes import TEMPORARY  # a temporary file's random part: one kind of file

STORE, STATE, LOG, CACHE = "store", "state", "log", "cache"
ROLES = (STORE, STATE, LOG, CACHE)  # the order a coverage lists them in: the store first
WORDS = {STORE: "the store", STATE: "the crawler's own state", LOG: "a log", CACHE: "a cache"}

_SQLITE_BESIDE = ("-journal", "-wal", "-shm")  # the files SQLite keeps beside a database while it writes
_LOG = re.compile(r"(^|/)(logs?)(/|$)|\.log(\.\d+)?$|(^|/)[^/]*\.log\.[^/]*$", re.I)
_CACHE = re.compile(r"(^|/)[^/]*(cache|robots)[^/]*(/|$)|(^|/)__pycache__(/|$)|\.pyc$", re.I)


def store_path(template: str) -> str:
    """The spec's `[store]` path as a write's path names it: relative to the work dir (`{work_dir}/x.jsonl` is
    `x.jsonl`), else as the spec gives it."""
    return template.replace("{work_dir}/", "", 1).rstrip("/") if template.startswith("{work_dir}/") else template


def file_role(path: str, store: str = "") -> str:
    """STORE, STATE, LOG or CACHE for a file a start wrote (relative to the work dir, or absolute), given the
    store's path (`store_path`). The work dir itself (a directory's fsync) is the store's. Without the store's path
    a file that is no log or cache is taken for the store's, as every write under the work dir was before."""
    if not path or store and (path == store or path.startswith(store + "/")
                              or path in (store + s for s in _SQLITE_BESIDE)):
        return STORE
    if _LOG.search(path):
        return LOG
    if _CACHE.search(path):
        return CACHE
    return STATE if store else STORE


def role_words(role: str) -> str:
    """`the store`, `the crawler's own state`, `a log`, `a cache`."""
    return WORDS.get(role, role)


def file_kind(paths: tuple[str, ...] | list[str]) -> str:
    """A write's files as a kind of file (`storage/datasets/default/N.json`): numbers, ids and a temporary file's
    random part folded, a name's words kept as they are."""
    named = " to ".join(p or "the work dir" for p in paths) or "the store"
    return folded(TEMPORARY.sub("N", named))


_OFF_AIM = re.compile(r"^aimed at (?P<syscall>\w+) number (?P<number>\d+) of its thread to (?P<targets>.+?), but"
                      r" strace's count reached (?P<landed>\w+)\((?:\d+<(?P<file>[^>]*)>)?")


def off_aim_words(note: str, store: str = "") -> str:
    """The write gate's note of a kill that landed at another write than its point names (faults/write_gate.py), in
    plain words: `the kill was meant for the 11th write of its thread to crawl_state.json (the crawler's own state),
    but it came at a write to crawl.log (a log): this start named its files otherwise than the recording that aimed
    the point (a port, a pid or a random part in a name?)`. A note in another form is kept as it is."""
    found = _OFF_AIM.match(note)
    if found is None:
        return note
    targets = found["targets"]
    meant = f"the {nth(int(found['number']))} {found['syscall']} of its thread to {targets}" \
            f" ({role_words(file_role(targets.split()[0], store))})"
    landed = found["file"]
    came = (f"a {found['landed']} to {landed} ({role_words(file_role(landed, store))})" if landed
            else f"another {found['landed']}")
    return (f"the kill was meant for {meant}, but it came at {came}: this start named its files otherwise than the"
            " recording that aimed the point (a port, a pid or a random part in a name?)")

