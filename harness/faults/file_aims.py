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

`w<k>:into:<file>` counts by the file a write's data ends up in: the k-th data write (write, pwrite, writev) made
to `<file>` itself, or to a temporary file the start later renames to `<file>` (`writes_into`). A framework patched to
write atomically (fix/*.dist.patch of a case: a new file, then a rename over the old) writes each version of a file
to a temporary file named by its pid and a counter, `.crawlee-tmp/X.json.4711.27`; unpatched, it writes the same
version to `X.json` itself. `w2:into:storage/request_queues/default/X.json` is the write of the file's 2nd version on
both, so a release and its candidate fix are killed at the same operation. The gate matches the temporary files by
a pattern made from the recording (`temporary_pattern`: the final name kept, the numbers around it any), since no two
starts name them alike. Explore offers it for a temporary file's write that has no `w<n>`; a file renamed over from a
temporary file of its own name is named by that name even when it holds an id (`named_by_id`): a start that names it
otherwise (a port in a hashed name) has no such write: it never reaches the point (no kill lands, and the run says
so), and it is never killed elsewhere.

Pure functions on a Recording: no I/O.
"""

from __future__ import annotations

import os
import re

from killtest.harness.faults.store_writes import TEMPORARY, InjectionPlan, Recording, StoreCall

INTO = "into:"  # `w2:into:FILE`: by the file the data ends up in
DATA_WRITES = ("write", "pwrite64", "writev", "pwritev", "pwritev2")
RENAMES = ("rename", "renameat", "renameat2")


def touching(recording: Recording, path: str) -> list[int]:
    """The n (1-based, in the recording's order) of every store call whose arguments name `path` (for
    `into:FILE`, every data write whose data ends up in FILE: `writes_into`)."""
    if path.startswith(INTO):
        return writes_into(recording, path[len(INTO):])
    return [n for n, call in enumerate(recording.calls, 1) if path in call.paths]


def finals(recording: Recording) -> dict[str, str]:
    """Each temporary file of the recording -> the store file it is renamed to: a rename's source, whose name holds
    its destination's (`X.json.4711.27` renamed to `queue/X.json`), followed through further renames."""
    moved = {c.paths[0]: c.paths[1] for c in recording.calls if c.syscall in RENAMES and len(c.paths) == 2
             and os.path.basename(c.paths[1]) in os.path.basename(c.paths[0]) and c.paths[0] != c.paths[1]}
    def last(path: str, hops: int = 0) -> str:
        return last(moved[path], hops + 1) if path in moved and hops < 8 else path
    return {temp: last(temp) for temp in moved}


def writes_into(recording: Recording, path: str) -> list[int]:
    """The n of every data write whose data ends up in `path`: made to it, or to a temporary file renamed to it."""
    ends = finals(recording)
    return [n for n, c in enumerate(recording.calls, 1) if c.syscall in DATA_WRITES and c.paths
            and path in (c.paths[0], ends.get(c.paths[0]))]


def temporary_pattern(temporary: str, final: str) -> str | None:
    """A regular expression (relative to the work dir) for every start's temporary file of `final` that this
    recording named `temporary`: its folder and `final`'s name kept, the numbers and random part around it any
    (`storage/\\.crawlee\\-tmp/X\\.json\\.\\d+\\.\\d+`); None when its name does not hold `final`'s."""
    folder, name = os.path.split(temporary)
    before, found, after = name.partition(os.path.basename(final))
    if not found:
        return None
    def any_numbers(text: str) -> str:
        text = TEMPORARY.sub("\0", text)
        return "".join(r"\d+" if part.isdigit() else "[a-z0-9_]{8}" if part == "\0" else re.escape(part)
                       for part in re.split(r"(\d+|\0)", text) if part)
    return (re.escape(folder) + "/" if folder else "") + any_numbers(before) + re.escape(found) + any_numbers(after)


def number_of(recording: Recording, index: int, path: str | None) -> int | None:
    """The recording's n of a point's write: `w<index>` itself, or the index-th call naming `path` (or, `into:FILE`,
    writing data that ends up in FILE); None when the start makes fewer."""
    if path is None:
        return index if index <= len(recording.calls) else None
    calls = touching(recording, path)
    return calls[index - 1] if index <= len(calls) else None


def plan_for_file_write(recording: Recording, path: str, k: int) -> InjectionPlan | None:
    """The gate's plan for the k-th store call naming `path`: its system call, and its number among the calls of
    that system call naming `path`, any thread. None when the start names `path` fewer than k times, or never
    when an id names it (`named_by_id`); ValueError (its words for the user) when it never names another."""
    calls = touching(recording, path)
    if not calls and named_by_id(path.removeprefix(INTO)):
        return None  # a name another start gives otherwise (a port in a hash): this start never reaches the point
    if not calls:
        files = sorted({p for call in recording.calls for p in call.paths if p})
        shown = ", ".join(files[:6]) + (f" and {len(files) - 6} more" if len(files) > 6 else "")
        raise ValueError(f"the start makes no store write to {path} (files it writes: {shown or 'none'})")
    if k > len(calls):
        return None
    call = recording.calls[calls[k - 1] - 1]
    when = sum(1 for n in calls[:k] if recording.calls[n - 1].syscall == call.syscall)
    if not path.startswith(INTO):
        return InjectionPlan(call.syscall, when, (path,), target=(path,), on_target=when, any_thread=True)
    final = path[len(INTO):]
    like = {temporary_pattern(temp, final) for temp, end in finals(recording).items() if end == final}
    if None in like:
        raise ValueError(f"a temporary file of {final} is named without its name; name the write by number")
    return InjectionPlan(call.syscall, when, (final,), target=(final,), on_target=when, any_thread=True,
                         like=tuple(sorted(p for p in like if p)))


# A word of letters and digits both, six or more long: a hash or an id (Crawlee names a request's file by a hash of
# its URL, which holds the site's port; a temporary file gets a random one). Two recordings of one explore share
# the site's port, so both may agree on such a name, and still a job on its own port or a replay would name the
# file otherwise. Not offered by file (counters such as 000000003.json are).
_ID = re.compile(r"(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{6,}")


def named_by_id(path: str) -> bool:
    """Whether a file's name holds an id, a hash (`_ID`) or a temporary file's random part: a name another start
    may not give it."""
    return bool(TEMPORARY.search(path)) or any(_ID.fullmatch(word) for word in re.split(r"[^A-Za-z0-9]+", path))


def _stable_file(call: StoreCall, both: set[str], over: set[str] | None = None) -> str | None:
    """The file a call is named by: the last of its paths both recordings wrote (a rename's destination, not its
    temporary source) and no id names, unless both renamed a temporary file of its name over it (`over`); None when
    there is none, or it names only the work dir."""
    kept = [p for p in call.paths if p and p in both and (not named_by_id(p) or p in (over or ()))]
    return kept[-1] if kept else None


def agreeing_into_writes(first: Recording, second: Recording, taken: set[int]) -> dict[int, tuple[str, int]]:
    """For the data writes of `first` not in `taken` made to a temporary file later renamed to a store file both
    recordings rename to: n -> (`into:FILE`, k) where the k-th data write into that file is the same system call on
    both, after the same ones (`writes_into`), and the gate tells both starts' temporary files (`temporary_pattern`)."""
    ends, theirs = finals(first), set(finals(second).values())
    found: dict[int, tuple[str, int]] = {}
    for n, call in enumerate(first.calls, 1):
        final = ends.get(call.paths[0]) if call.paths else None
        if n in taken or call.syscall not in DATA_WRITES or final is None or final not in theirs \
                or temporary_pattern(call.paths[0], final) is None:
            continue
        mine, other = writes_into(first, final), writes_into(second, final)
        k = mine.index(n) + 1
        pattern = re.compile(temporary_pattern(call.paths[0], final) or "")
        if [first.calls[m - 1].syscall for m in mine[:k]] == [second.calls[m - 1].syscall for m in other[:k]] \
                and all(pattern.fullmatch(second.calls[m - 1].paths[0]) or second.calls[m - 1].paths[0] == final
                        for m in other[:k]):  # the pattern knows the other start's temporary files too
            found[n] = (INTO + final, k)
    return found


def agreeing_file_writes(first: Recording, second: Recording, taken: set[int]) -> dict[int, tuple[str, int]]:
    """For the writes of `first` not in `taken` (the `w<n>` both recordings agree on): n -> (file, k) where the
    k-th call naming that file is the same on both recordings (the same system calls name the file, in the same
    order, up to it), so `w<k>:<file>` names the same write whichever recording aims it."""
    both = {p for call in first.calls for p in call.paths} & {p for call in second.calls for p in call.paths}
    over = set(finals(first).values()) & set(finals(second).values())  # renamed over from its own temporary files
    found: dict[int, tuple[str, int]] = {}
    named: dict[str, tuple[list[int], list[str], list[str]]] = {}  # file -> first's n naming it, and each one's calls
    for n, call in enumerate(first.calls, 1):
        path = _stable_file(call, both, over)
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
    offered.update(agreeing_into_writes(first, second, set(offered)))
    return dict(sorted(offered.items()))
