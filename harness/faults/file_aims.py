"""Store writes named by their file, not their place in the start's order: `w2:storage/datasets/7.json`.

A thread pool that writes each file atomically (a temporary file named at random, then a rename over the
real one: Crawlee for Python, the Apify SDK) defeats `w<n>`. strace counts per thread (store_writes.py), and
which pool thread takes a write is a race, so "the 5th write" is another thread's count on every start; and
the temporary file's name is new each time, so two recordings never agree on it. Explore offered none of
those writes, and said so (campaigns/coverage.py).

What stays the same from start to start is the file a write lands in: the 1st rename to `datasets/7.json`
is the same write whichever thread makes it. `w<k>:<file>` is the k-th store write whose arguments name
`<file>` (relative to the work dir), counted over every thread and process of the start, with the system
call the recording saw there. strace cannot count that way, so the start runs under the file gate
(file_gate.py: seccomp's user notification, every call of that system call waiting in the kernel until the
gate has looked at it), which kills the start while the k-th waits. Explore offers such a point for a write
it has no `w<n>` for, when both recordings made the same calls to that file up to it (`offered_writes`),
and not for files named by an id or a hash (`named_by_id`), which another run names otherwise.

Pure functions on a Recording: no I/O.
"""

from __future__ import annotations

import re

from killtest.harness.faults.store_writes import TEMPORARY, InjectionPlan, Recording, StoreCall


def touching(recording: Recording, path: str) -> list[int]:
    """The n (1-based, in the recording's order) of every store call whose arguments name `path`."""
    return [n for n, call in enumerate(recording.calls, 1) if path in call.paths]


def number_of(recording: Recording, index: int, path: str | None) -> int | None:
    """The recording's n of a point's write: `w<index>` itself, or the index-th call naming `path`; None when the
    start makes fewer."""
    if path is None:
        return index if index <= len(recording.calls) else None
    calls = touching(recording, path)
    return calls[index - 1] if index <= len(calls) else None


def plan_for_file_write(recording: Recording, path: str, k: int) -> InjectionPlan | None:
    """The gate's plan for the k-th store call naming `path`: its system call, and its number among the calls of
    that system call naming `path`, any thread. None when the start names `path` fewer than k times;
    ValueError (its words for the user) when it never names it."""
    calls = touching(recording, path)
    if not calls:
        files = sorted({p for call in recording.calls for p in call.paths if p})
        shown = ", ".join(files[:6]) + (f" and {len(files) - 6} more" if len(files) > 6 else "")
        raise ValueError(f"the start makes no store write to {path} (files it writes: {shown or 'none'})")
    if k > len(calls):
        return None
    call = recording.calls[calls[k - 1] - 1]
    when = sum(1 for n in calls[:k] if recording.calls[n - 1].syscall == call.syscall)
    return InjectionPlan(call.syscall, when, (path,), target=(path,), on_target=when, any_thread=True)


# A word of letters and digits both, six or more long: a hash or an id (Crawlee names a request's file by a hash of
# its URL, which holds the site's port; a temporary file gets a random one). Two recordings of one explore share
# the site's port, so both may agree on such a name, and still a job on its own port or a replay would name the
# file otherwise. Not offered by file (counters such as 000000003.json are).
_ID = re.compile(r"(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{6,}")


def named_by_id(path: str) -> bool:
    """Whether a file's name holds an id, a hash (`_ID`) or a temporary file's random part: a name another start
    may not give it."""
    return bool(TEMPORARY.search(path)) or any(_ID.fullmatch(word) for word in re.split(r"[^A-Za-z0-9]+", path))


def _stable_file(call: StoreCall, both: set[str]) -> str | None:
    """The file a call is named by: the last of its paths both recordings wrote (a rename's destination, not its
    temporary source) and no id names; None when there is none, or it names only the work dir."""
    kept = [p for p in call.paths if p and p in both and not named_by_id(p)]
    return kept[-1] if kept else None


def agreeing_file_writes(first: Recording, second: Recording, taken: set[int]) -> dict[int, tuple[str, int]]:
    """For the writes of `first` not in `taken` (the `w<n>` both recordings agree on): n -> (file, k) where the
    k-th call naming that file is the same on both recordings (the same system calls name the file, in the same
    order, up to it), so `w<k>:<file>` names the same write whichever recording aims it."""
    both = {p for call in first.calls for p in call.paths} & {p for call in second.calls for p in call.paths}
    found: dict[int, tuple[str, int]] = {}
    named: dict[str, tuple[list[int], list[str], list[str]]] = {}  # file -> first's n naming it, and each one's calls
    for n, call in enumerate(first.calls, 1):
        path = _stable_file(call, both)
        if n in taken or path is None:
            continue
        if path not in named:
            mine = touching(first, path)
            named[path] = (mine, [first.calls[m - 1].syscall for m in mine],
                           [second.calls[m - 1].syscall for m in touching(second, path)])
        numbers, ours, theirs = named[path]
        k = numbers.index(n) + 1
        if ours[:k] == theirs[:k]:
            found[n] = (path, k)
    return found


def offered_writes(first: Recording, second: Recording, agreed: list[int]) -> dict[int, tuple[str, int] | None]:
    """Every write of `first` explore makes a point of: n -> None for a `w<n>`, (file, k) for a `w<k>:<file>`."""
    offered: dict[int, tuple[str, int] | None] = dict.fromkeys(agreed)
    offered.update(agreeing_file_writes(first, second, set(agreed)))
    return dict(sorted(offered.items()))
