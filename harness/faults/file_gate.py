"""Run a start with its calls of one system call stopped in the kernel, and SIGKILL it at the k-th naming one file.

    python -S file_gate.py SYSCALL K TARGET -- COMMAND...

The gate of `w<k>:<file>` (harness/faults/file_aims.py): the k-th SYSCALL whose arguments name TARGET, made by
whichever thread or process of the start. strace cannot carry it out: it counts per thread, its `-P` matches a
rename by its first path only, and holding every rename with its `delay_enter` made strace 6.1 stop resuming a
thread pool's threads once several were held at once (the start hung: measured on Crawlee for Python, see
scrapers/cases/crawlee-python-1825/README.md).

So the gate uses the kernel's own mechanism for a supervisor, seccomp's user notification (seccomp(2),
seccomp_unotify(2)): before the command runs, the gate's child installs a filter that sends every call of
SYSCALL (and nothing else) to the gate, and passes the gate the filter's listener. Each such call waits in
the kernel until the gate answers. The gate reads which file it names (/proc/TID/fd for a call on a
descriptor, /proc/TID/mem for a path, against the dir fd or the cwd), lets it go on
(SECCOMP_USER_NOTIF_FLAG_CONTINUE) unless it is the k-th naming TARGET, and at that one reads the program's
stack when asked (write_gate.locate) and SIGKILLs the whole start while the call still waits: the write
never happens, on any thread, however long the gate takes. The filter is inherited by every thread and
child; no_new_privs is set, as a filter needs without CAP_SYS_ADMIN. x86_64 only (the filter names system
calls by their numbers there); the point refuses elsewhere in one line.

It imports only the standard library and its sibling write_gate.py, and is run by path with -S.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import write_gate  # noqa: E402  (its sibling, run by path as it is)

# x86_64 system call numbers of the write-type calls a store write is (harness/faults/store_writes.py)
NUMBERS = {"write": 1, "pwrite64": 18, "writev": 20, "fsync": 74, "fdatasync": 75, "truncate": 76, "ftruncate": 77,
           "rename": 82, "unlink": 87, "unlinkat": 263, "renameat": 264, "sync_file_range": 277, "fallocate": 285,
           "pwritev": 296, "renameat2": 316, "pwritev2": 328}
SYS_SECCOMP, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER = 317, 1, 1 << 3
PR_SET_NO_NEW_PRIVS, AUDIT_ARCH_X86_64 = 38, 0xC000003E
RET_ALLOW, RET_USER_NOTIF, RET_KILL_PROCESS = 0x7FFF0000, 0x7FC00000, 0x80000000
NOTIF_RECV, NOTIF_SEND, FLAG_CONTINUE = 0xC0502100, 0xC0182101, 1  # _IOWR('!', 0|1, seccomp_notif|_resp)
AT_FDCWD = -100
# Where a call's files are: (i, d) a path in argument i, relative to the dir fd in argument d (None: the cwd).
# Every other call names the file of the descriptor in its first argument.
WHERE: dict[str, tuple[tuple[int, int | None], ...]] = {
    "rename": ((0, None), (1, None)), "renameat": ((1, 0), (3, 2)), "renameat2": ((1, 0), (3, 2)),
    "unlink": ((0, None),), "unlinkat": ((1, 0),), "truncate": ((0, None),)}


def _filter(number: int) -> bytes:
    """A classic BPF program: the call numbered `number` goes to the listener, every other call is let through; a
    call of another architecture (x32, i386) kills the process, since its numbers mean other calls."""
    def op(code: int, jt: int, jf: int, k: int) -> bytes:
        return struct.pack("HBBI", code, jt, jf, k)
    ld_w_abs, jeq_k, ret_k = 0x20, 0x15, 0x06
    return b"".join([op(ld_w_abs, 0, 0, 4), op(jeq_k, 1, 0, AUDIT_ARCH_X86_64), op(ret_k, 0, 0, RET_KILL_PROCESS),
                     op(ld_w_abs, 0, 0, 0), op(jeq_k, 0, 1, number), op(ret_k, 0, 0, RET_USER_NOTIF),
                     op(ret_k, 0, 0, RET_ALLOW)])


def install(number: int) -> int:
    """In the child, before exec: no_new_privs, and the filter; the listener's fd."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    program = ctypes.create_string_buffer(_filter(number))
    fprog = struct.pack("HxxxxxxQ", len(program.raw) // 8, ctypes.addressof(program))
    listener = libc.syscall(SYS_SECCOMP, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                            ctypes.c_char_p(fprog))
    if listener < 0:
        raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)")
    return int(listener)


def _string(tid: int, address: int) -> str:
    with open(f"/proc/{tid}/mem", "rb", buffering=0) as memory:
        memory.seek(address)
        data = memory.read(4096)
    return data.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def named(tid: int, syscall: str, args: tuple[int, ...]) -> list[str]:
    """The absolute paths of the files a waiting call names."""
    found = []
    if syscall not in WHERE:
        try:
            return [os.readlink(f"/proc/{tid}/fd/{ctypes.c_int(args[0]).value}")]
        except OSError:
            return []  # the thread is gone, or the descriptor is not a file
    for at, dir_fd in WHERE[syscall]:
        try:
            path = _string(tid, args[at])
            if not path.startswith("/"):
                fd = None if dir_fd is None else ctypes.c_int(args[dir_fd]).value
                base = os.readlink(f"/proc/{tid}/cwd" if fd in (None, AT_FDCWD) else f"/proc/{tid}/fd/{fd}")
                path = os.path.join(base, path)
            found.append(os.path.normpath(path))
        except OSError:
            continue  # the thread is gone
    return found


def supervise(listener: int, syscall: str, when: int, target: str) -> None:
    """Answer every call the filter sends; at the `when`-th naming `target`, kill the start with it waiting. Returns
    when no process is left under the filter (the listener hangs up)."""
    import fcntl
    import select

    seen = 0
    notification = bytearray(80)  # struct seccomp_notif: id, pid, flags, then seccomp_data (nr, arch, ip, args[6])
    poller = select.poll()
    poller.register(listener, select.POLLIN)
    while True:
        events = dict(poller.poll())
        if not events.get(listener, 0) & select.POLLIN:
            if events.get(listener, 0) & (select.POLLHUP | select.POLLERR):
                return
            continue
        notification[:] = bytes(80)  # the kernel refuses (EINVAL) a buffer that is not all zeros
        try:
            fcntl.ioctl(listener, NOTIF_RECV, notification)
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.EINTR):  # the caller died meanwhile; a signal
                continue
            # Never spin: a gate that cannot read its listener stops supervising (the calls under the filter then
            # fail with ENOSYS, and the start says so) rather than burn a core until someone kills it.
            print(f"killtest's file gate: reading the filter's listener: {error}", file=sys.stderr, flush=True)
            return
        ident, tid = struct.unpack_from("QI", notification, 0)
        args = struct.unpack_from("6Q", notification, 32)
        if target in named(tid, syscall, args):
            seen += 1
            if seen == when:
                write_gate.locate(tid)
                write_gate.kill_start()  # the call is still waiting: it never runs
        try:
            fcntl.ioctl(listener, NOTIF_SEND, struct.pack("QqiI", ident, 0, 0, FLAG_CONTINUE))
        except OSError:
            pass  # the caller died while we looked


def main(argv: list[str]) -> None:
    split = argv.index("--")
    syscall, when, target = argv[:split]
    command = argv[split + 1:]
    ctypes.CDLL(None).prctl(write_gate.PR_SET_CHILD_SUBREAPER, 1)  # what the start leaves comes back to the gate
    os.environ.setdefault("UV_THREADPOOL_SIZE", "1")  # as the recording had it (write_gate's comment)
    parent_end, child_end = socket.socketpair()
    child = os.fork()
    if child == 0:  # the start's program: the filter first, its listener to the gate, then exec
        parent_end.close()
        try:
            listener = install(NUMBERS[syscall])
            socket.send_fds(child_end, [b"L"], [listener])
            os.close(listener)
            child_end.recv(1)  # the gate holds the listener: only now may the first call go to it
            child_end.close()
            os.execvp(command[0], command)
        except OSError as error:
            print(f"killtest's file gate: {error}", file=sys.stderr, flush=True)
            os._exit(127)
    child_end.close()
    try:
        _, fds, _, _ = socket.recv_fds(parent_end, 1, 1)
    except OSError:
        fds = []
    if fds:
        parent_end.send(b"G")
        parent_end.close()
        supervise(fds[0], syscall, int(when), os.path.normpath(target))
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        os.kill(os.getpid(), os.WTERMSIG(status))  # the start's signal, as the runner would have seen it
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main(sys.argv[1:])
