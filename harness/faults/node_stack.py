"""Read the JavaScript frames of a Node.js thread held at a system call, from outside, and print them.

    python -S node_stack.py TID PID...

The write gate (write_gate.py) runs it while strace holds thread TID at a store write, when the start
runs with `--perf-basic-prof --interpreted-frames-native-stack` (set by the gate for a locating run
only). V8 then writes /tmp/perf-<pid>.map: one line per code range, `START SIZE NAME`, where a
JavaScript function's NAME is `JS:~saveRecord /path/app.cjs:3:20` (the function's own start: line
and column of its declaration). The second flag gives each interpreted function its own copy of the
interpreter's entry, so an interpreted frame's return address falls inside a range of its function.

The held thread's stack pointer is the 8th field of /proc/TID/syscall (x86_64: the call's number, six
arguments, then sp and pc). Each 8-byte word from there up to the stack's end (1 MiB at most) that
falls inside a range of the map is printed, innermost first: return addresses of live frames, and now
and then a stale word a frame left, which is why a reader takes the first frame of the program's own
files and not the whole list as a backtrace. Then each PID's map is deleted (the start is killed next).

Why not the inspector or a --require hook: both run code inside the program; this reads it from outside,
as py-spy does for Python, and the program is unchanged. It imports only the standard library.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import struct
import sys

STACK_BYTES = 1 << 20  # a main thread's frames sit within a few hundred KB of its sp


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


def stack_words(pid: str, tid: int) -> bytes:
    with open(f"/proc/{tid}/syscall", encoding="ascii") as held:
        sp = int(held.read().split()[7], 16)
    data = b""
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        mem.seek(sp)
        while len(data) < STACK_BYTES:
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
            found.append(ranges[at][2])
    return found


def main(argv: list[str]) -> None:
    tid, pids = int(argv[0]), argv[1:]
    with open(f"/proc/{tid}/status", encoding="ascii") as status:
        pid = next(line.split()[1] for line in status if line.startswith("Tgid:"))
    try:
        print("\n".join(frames(pid, tid)))
    except (OSError, IndexError, ValueError) as error:
        print(f"no stack: {error}")
    finally:
        for each in {pid, *pids}:
            with contextlib.suppress(OSError):
                os.remove(maps_path(each))


if __name__ == "__main__":
    main(sys.argv[1:])
