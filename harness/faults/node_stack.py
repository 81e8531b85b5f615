"""Read the JavaScript frames of a Node.js thread held at a system call, from outside, and print them.

    python -S node_stack.py TID PID...

The write gate (write_gate.py) runs it while strace holds thread TID at a store write, when the start
runs with `--perf-basic-prof --interpreted-frames-native-stack` (set by the gate for a locating run
only). V8 then writes /tmp/perf-<pid>.map: one line per code range, `START SIZE NAME`, where a
JavaScript function's NAME is `JS:~saveRecord /path/app.cjs:3:20` (the function's own start: line
and column of its declaration). The second flag gives each interpreted function its own copy of the
interpreter's entry, so an interpreted frame's return address falls inside a range of its function.

The held thread's stack pointer is the 8th field of /proc/TID/syscall (x86_64: the call's number, six
arguments, then sp and pc). Each 8-byte word from there up to the stack's end (the end of the mapping that
holds sp, and 1 MiB at most) that falls inside a range of the map is printed, innermost first: return
addresses of live frames, and now and then a stale word a frame left, which is why a reader takes the first
frame of the program's own files and not the whole list as a backtrace. Not past the mapping: a thread's
stack is a mapping of its own, and /proc/PID/mem reads on into whatever lies above it (another thread's
stack, V8's heap), whose stale code addresses named functions the held thread never ran (Crawlee's
writes, made on libuv's thread pool, were "located" in a module's top level). A thread other than the
process's main one says so first (`# not the main thread: TID of PID`): Node.js runs the program's
JavaScript on its main thread (and worker_threads'), and an asynchronous fs call's write runs on libuv's
thread pool, whose stack holds no frame of the code that queued it.

A frame's file inside a killtest tool env is named by the env's final path (the `<hash>` link), not by the
folder it was built in and V8 resolved it to (`<hash>.<pid>-<ns>`, tool_envs.py): the path a reader finds.
Then each PID's map is deleted (the start is killed next).

Why not the inspector or a --require hook: both run code inside the program; this reads it from outside,
as py-spy does for Python, and the program is unchanged. It imports only the standard library.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import re
import struct
import sys

STACK_BYTES = 1 << 20  # a main thread's frames sit within a few hundred KB of its sp
OFF_MAIN = "# not the main thread: "  # main's first line for another thread: `# not the main thread: TID of PID`
# What campaigns/locate.py says when no frame of the program was found: on a thread other than the main one, and else.
OFF_MAIN_THREAD = ("no source location: the write ran on a thread other than Node.js's main thread, as an"
                   " asynchronous fs call's write runs on libuv's thread pool; the JavaScript frame that queued it"
                   " is not on that thread's stack")
NO_JS_FRAME = ("no source location: no JavaScript frame of the program on the writing thread's stack"
               " (as when an asynchronous fs call writes from libuv's worker thread)")
_BUILD_FOLDER = re.compile(r"(/[^ :]*)/([0-9a-f]{16})\.\d+-\d+(?=/)")  # tool_envs.py's `<hash>.<pid>-<ns>`


def maps_path(pid: int | str) -> str:
    return f"/tmp/perf-{pid}.map"


def code_ranges(pid: str) -> tuple[list[int], list[tuple[int, int, str]]]:
    ranges = []
    with open(maps_path(pid), encoding="utf-8", errors="replace") as lines:
        for line in lines:
            start, size, name = (line.rstrip("\n").split(" ", 2) + ["", ""])[:3]
            with contextlib.suppress(ValueError):
                ranges.append((int(start, 16), int(size, 16), name))
    ranges.sort()
    return [r[0] for r in ranges], ranges


def mapping_end(pid: str, address: int) -> int:
    """The end of the mapping of /proc/PID/maps that holds `address`; `address` itself when none does."""
    with open(f"/proc/{pid}/maps", encoding="ascii", errors="replace") as maps:
        for line in maps:
            start, _, end = line.split(" ", 1)[0].partition("-")
            if int(start, 16) <= address < int(end, 16):
                return int(end, 16)
    return address


def stack_words(pid: str, tid: int) -> bytes:
    """The held thread's stack from its sp to the end of its own stack's mapping (STACK_BYTES at most)."""
    with open(f"/proc/{tid}/syscall", encoding="ascii") as held:
        sp = int(held.read().split()[7], 16)
    most = min(STACK_BYTES, mapping_end(pid, sp) - sp)
    data = b""
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        mem.seek(sp)
        while len(data) < most:
            try:
                chunk = mem.read(4096 - (sp + len(data)) % 4096)  # page by page: the stack ends at a page
            except OSError:
                break  # past the stack's top
            if not chunk:
                break
            data += chunk
    return data


def frames(pid: str, tid: int) -> list[str]:
    starts, ranges = code_ranges(pid)
    data = stack_words(pid, tid)
    found = []
    for (word,) in struct.iter_unpack("<Q", data[:len(data) // 8 * 8]):
        at = bisect.bisect_right(starts, word) - 1
        if at >= 0 and word < ranges[at][0] + ranges[at][1]:
            found.append(final_paths(ranges[at][2]))
    return found


def final_paths(name: str) -> str:
    """`name` with a tool env's build folder (`.../<hash>.<pid>-<ns>/...`, what V8 resolved NODE_PATH's link to)
    written as the env's `<hash>` link, when that link names that very folder (tool_envs.py builds so)."""
    def link(found: re.Match) -> str:
        folder, digest = found[1], found[2]
        try:
            same = os.readlink(os.path.join(folder, digest)) == found[0][len(folder) + 1:]
        except OSError:
            same = False
        return os.path.join(folder, digest) if same else found[0]
    return _BUILD_FOLDER.sub(link, name)


def main(argv: list[str]) -> None:
    tid, pids = int(argv[0]), argv[1:]
    with open(f"/proc/{tid}/status", encoding="ascii") as status:
        pid = next(line.split()[1] for line in status if line.startswith("Tgid:"))
    try:
        if tid != int(pid):
            print(f"{OFF_MAIN}{tid} of {pid}")
        print("\n".join(frames(pid, tid)))
    except (OSError, IndexError, ValueError) as error:
        print(f"no stack: {error}")
    finally:
        for each in {pid, *pids}:
            with contextlib.suppress(OSError):
                os.remove(maps_path(each))


if __name__ == "__main__":
    main(sys.argv[1:])
