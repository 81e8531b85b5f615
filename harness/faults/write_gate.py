"""Run a start under strace, held at one store write, and SIGKILL the whole start there.

    python -S write_gate.py SYSCALL WHEN PATH... [--aim N MISSED_FILE TARGET...] -- COMMAND...

strace holds the thread that enters its WHEN-th SYSCALL to one of the PATHs (`-e inject=SYSCALL:
delay_enter=...:when=WHEN -P PATH...`: counted per thread, see harness/faults/store_writes.py) before
the call runs. strace prints a call's name and arguments as it enters it; this gate reads strace's log
as it is written, counts each thread's entries the same way, and at the WHEN-th SIGKILLs every other
process of its group (the start's session), reaps them (it is their child subreaper, so the scraper
strace traced comes back to it, not to a PID 1 that may never reap it), then SIGKILLs itself. The held
call never runs, so the kill lands before that write, and the runner sees the start die of SIGKILL as
with any exact point, with no zombie left in its group. Other processes of a multi-process start run
on for the few milliseconds the gate takes to read the line (they cannot write through the held one,
but they could send a request).

Why a delay and not strace's own `signal=KILL`: strace 6.1 under `--seccomp-bpf` (which stops the
tracee at the traced calls only, about three times faster for a Python start) did not deliver the
injected signal here, while the delay is honoured; and `signal=KILL` kills one process, not the start.

With `--aim`, the gate also checks the WHEN-th entry is the N-th of its thread's to the aimed call's
files (TARGET: strace prints each call's file, `-y`); when not (this start named a file otherwise than
the recording that aimed the point did), it writes why to MISSED_FILE before the kill, and the runner
records the kill as missed, not landed (harness/faults/points/store_write.py, `gate_missed`).

With `--after` (an after twin, `aw5`: harness/faults/points/after_store_write.py) the WHEN-th call is let run
and held on its way out instead: `delay_exit` in place of `delay_enter`. strace (src/syscall.c,
`syscall_exiting_trace`) at the call's exit stop first tampers with it (`tamper_with_syscall_exiting` ->
`delay_tcb(..., false)`, which marks the thread TCB_DELAYED and arms strace's timer), then prints the call's
return, and does not resume a TCB_DELAYED thread until the timer runs out (src/strace.c, `restart_delayed_tcb`).
So when the gate reads the return of the WHEN-th call (its line ending in ` = ...`, or its `<... resumed>` line)
the kernel has done the call and the thread has not seen its result: the gate SIGKILLs the start there, after
that write and before anything the program does next (checked on strace 6.1 here).

It imports only the standard library and is run by path with `-S`: it costs a start about 20 ms.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

HOLD_US = 30_000_000  # long enough for the gate to read the line; the runner's time limit covers a lost one
PR_SET_CHILD_SUBREAPER = 36
NODE_STACK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node_stack.py")
# V8's code map for node_stack.py; on node's command line, not in NODE_OPTIONS, which refuses --logfile: the
# code log the map implies would otherwise be left in the start's directory (`+`: an unnamed temporary file)
NODE_MAP = ("--perf-basic-prof", "--interpreted-frames-native-stack", "--logfile=+", "--no-logfile-per-isolate")
# env's options that take a value: a short one's is the rest of its word or the next word (`-uNAME`, `-u NAME`),
# a long one's follows `=` or is the next word; -S (--split-string) splits one string into the command
ENV_SHORT_VALUED, ENV_LONG_VALUED = "uCSa", ("--unset", "--chdir", "--argv0", "--split-string")


def program_at(command: Sequence[str]) -> int | None:
    """Where in `command` the program it runs is: its first word, or the first past `env` (`/usr/bin/env`), its
    options and its NAME=VALUE assignments (`env -i -u VAR -- NAME=VALUE python3 ...`; an `env` run by env is
    looked past too). None when the words name no program: nothing after env's own, or `env -S STRING`
    (the program is inside STRING)."""
    at = 0
    while at < len(command) and os.path.basename(command[at]) == "env":
        at, options = at + 1, True
        while at < len(command):
            word = command[at]
            if options and word.startswith("--") and word != "--":  # --ignore-environment, --unset=NAME, ...
                name = word.split("=", 1)[0]
                valued = None if name not in ENV_LONG_VALUED else "S" if name == "--split-string" else name
                at += 2 if valued and name == word else 1
            elif options and word.startswith("-") and word not in ("-", "--"):  # -i, -0, -uNAME, -iu NAME, ...
                where = next((n for n, letter in enumerate(word) if n and letter in ENV_SHORT_VALUED), 0)
                valued = word[where] if where else None
                at += 2 if where == len(word) - 1 else 1  # the value is the next word
            elif options and word in ("-", "--") or "=" in word:  # `-` is -i and `--`: no option follows
                options, at = False, at + 1
                continue
            else:
                break
            if valued == "S":
                return None
    return at if at < len(command) else None


def kill_start(tracer: int = 0) -> None:
    """SIGKILL every other process of this group and reap them all, then this one: the start dies whole.

    strace (`tracer`, when the start runs under it) dies last: strace 6.1 does not set PTRACE_O_EXITKILL,
    so a tracee whose tracer dies first is let go and makes the held write before its own SIGKILL lands
    (about one kill in 40 did)."""
    me, group = os.getpid(), os.getpgrp()
    for _ in range(1000):
        others = sorted((pid for pid in _members(group) if pid != me), key=lambda pid: pid == tracer)
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        if not others:
            break
        time.sleep(0.001)
    os.kill(me, signal.SIGKILL)


def locate(tid: int) -> None:
    """With KILLTEST_LOCATE_TO set (harness/campaigns/locate.py), dump the held process's Python stack there
    before the kill: `py-spy dump --nonblocking` reads its memory without attaching (strace already traces it,
    and a tracee cannot have two tracers), while the thread waits in strace's delay, at the very write.
    With KILLTEST_LOCATE_NODE too, node_stack.py reads the JavaScript frames, and deletes the start's maps."""
    target = os.environ.get("KILLTEST_LOCATE_TO")
    if not target:
        return
    try:
        with open(f"/proc/{tid}/status", encoding="ascii") as status:
            pid = next(line.split()[1] for line in status if line.startswith("Tgid:"))
        reader = [os.environ.get("KILLTEST_PY_SPY", "py-spy"), "dump", "--pid", pid, "--nonblocking",
                  "--full-filenames"]
        if os.environ.get("KILLTEST_LOCATE_NODE"):  # JavaScript frames from V8's perf map (node_stack.py)
            reader = [sys.executable, "-S", NODE_STACK, str(tid), *map(str, _members(os.getpgrp()))]
        began = time.monotonic()
        dump = subprocess.run(reader, capture_output=True, text=True, timeout=10)
        # what reading the stack cost, for the exploration's count of what locating took (campaigns/locate.py)
        text = (dump.stdout + dump.stderr + f"\n# read in {time.monotonic() - began:.4f} s\n"
                f"# held thread {tid}\n")  # py-spy lists every thread: the held one made the write
    except (OSError, StopIteration, subprocess.SubprocessError) as error:
        text = f"no stack: {error}"
    with open(target, "a", encoding="utf-8") as out:  # a dump a kill: a fuzzed schedule may hold several
        out.write(text)


def missed(aim: list[str], syscall: str, entry: str) -> None:
    """The count landed off the aimed call: say so in the file the runner reads (store_write.gate_missed).
    The start is killed all the same: the held call cannot be let go (strace's seccomp filter outlives it)."""
    number, path, *targets = aim
    what = entry.split("(", 1)[1]
    with open(path, "w", encoding="utf-8") as out:
        out.write(f"aimed at {syscall} number {number} of its thread to {' '.join(targets)}, but strace's count"
                  f" reached {syscall}({what}: this start named its files otherwise than the recording that aimed"
                  " the point (a port, pid or random name in a file name?)")


def _held_kill(tid: str, tracer: int) -> None:
    """--after: the thread is held on its way out of the call, its stack still at the write: read it, then kill."""
    locate(int(tid))
    kill_start(tracer)


def returned(line: str, tid: str, syscall: str) -> bool:
    """Whether a finished line of strace's log is thread `tid`'s return from its `syscall`: the whole call
    (`123 write(3, ...)   = 5 (DELAYED)`) or its resumption (`123 <... write resumed>) = 5`), not `<unfinished ...>`."""
    if not line.startswith(tid) or line[len(tid):len(tid) + 1] not in (" ", "\t"):
        return False
    body = line[len(tid):].lstrip()
    begins = body.startswith(f"{syscall}(") or body.startswith(f"<... {syscall} resumed>")
    return begins and not body.rstrip().endswith("<unfinished ...>") and re.search(r"\)\s+= ", body) is not None


def _members(group: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.getpgid(int(name)) == group:
                    found.append(int(name))
            except ProcessLookupError:
                pass
    return found


def main(argv: list[str]) -> None:
    split = argv.index("--")
    after = argv[0] == "--after"  # kill once the WHEN-th call has returned (held on its way out), not before it
    head = argv[1 if after else 0:split]
    aim = head[head.index("--aim") + 1:] if "--aim" in head else []  # --aim N MISSED_FILE TARGET...
    syscall, when_text, *paths = head[:len(head) - len(aim) - (1 if aim else 0)]
    when = int(when_text)
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1)  # what the start leaves behind comes back to the gate
    read_end, write_end = os.pipe()
    strace = ["strace", "-f", "-q", "--seccomp-bpf", "-o", f"/dev/fd/{write_end}", "-e", f"trace={syscall}",
              "-e", f"inject={syscall}:delay_{'exit' if after else 'enter'}={HOLD_US}:when={when}"]
    strace += ["-y"] if aim else []
    for path in paths:
        strace += ["-P", path]
    command = argv[split + 1:]
    # One libuv pool thread, as the recording that aimed the point had (store_writes.ONE_POOL_THREAD, whose
    # names are repeated here: the gate imports nothing of killtest's); a design's own value is kept.
    os.environ.setdefault("UV_THREADPOOL_SIZE", "1")
    node = bool(os.environ.get("KILLTEST_LOCATE_NODE"))  # this start only: not the next, nor the recording
    program = program_at(command)
    if node and program is not None and os.path.basename(command[program]) in ("node", "nodejs"):
        command[program + 1:program + 1] = NODE_MAP
    process = subprocess.Popen([*strace, "--", *command], pass_fds=(write_end,))
    os.close(write_end)
    # Aimed: an entry counts once its file is written out (`-y`: `write(5</path>`, `unlink("/path"`).
    entry = re.compile(rf"^(\d+)\s+{re.escape(syscall)}\(" + (r'(?:-?\d+<(?:[^<>]|<[^<>]*>)*>|[^"]*"(?:[^"\\]|\\.)*")'
                                                              if aim else ""))
    counts: dict[str, int] = {}
    on_target: dict[str, int] = {}  # each thread's entries to the aimed call's files
    pending = ""  # the line being written, whose entry may not be counted yet
    counted = False
    held: str | None = None  # --after: the thread whose WHEN-th call was counted, until its return is read
    with os.fdopen(read_end, "rb", buffering=0) as log:
        while chunk := log.read(65536):
            pending += chunk.decode("utf-8", "replace")
            *finished, pending = pending.split("\n")
            for line in [*finished, pending]:
                if line is pending and (counted or "(" not in line):
                    continue
                if line is not pending and counted:
                    counted = False  # this finished line was counted when it was pending
                    if held is not None and returned(line, held, syscall):
                        _held_kill(held, process.pid)
                    continue
                if held is not None and line is not pending and returned(line, held, syscall):
                    _held_kill(held, process.pid)  # the held call's `<... resumed>` line: it has returned
                if node and " +++ " in line:  # a process that ran to its end leaves its map: delete it
                    with contextlib.suppress(OSError):
                        os.remove(f"/tmp/perf-{line.split()[0]}.map")
                found = entry.match(line)
                if found is None:
                    continue
                tid = found.group(1)
                counts[tid] = counts.get(tid, 0) + 1
                targets = aim[2:]
                if any(f"<{t}>" in found.group(0) or f'"{t}"' in found.group(0) for t in targets):
                    on_target[tid] = on_target.get(tid, 0) + 1
                if counts[tid] == when:
                    if aim and on_target.get(tid, 0) != int(aim[0]):
                        missed(aim, syscall, found.group(0))
                    if not after:
                        locate(int(tid))
                        kill_start(process.pid)
                    held = tid
                    if line is not pending and returned(line, tid, syscall):
                        _held_kill(tid, process.pid)  # its entry and its return came in one line
                counted = line is pending
    status = process.wait()
    if status < 0:
        os.kill(os.getpid(), -status)  # strace mirrors a killed command; so does the gate
    sys.exit(status)


if __name__ == "__main__":
    main(sys.argv[1:])
