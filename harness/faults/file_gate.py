"""Run a start with its calls of one system call stopped in the kernel, and SIGKILL it at the k-th naming one file.

    python -S file_gate.py [--after] SYSCALL K TARGET [--like PATTERN]... -- COMMAND...

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

With `--after` (an after twin, `aw<k>:<file>`: harness/faults/points/after_store_write.py) the k-th call must be
done before the kill, and nothing of the start may run after it. Letting it go on (FLAG_CONTINUE) gives no
word of when it is done, and the thread would return to the program at once. So the gate makes the call
itself, on the caller's behalf (`perform`: the same paths, or the same open file through /proc/TID/fd with
its offset and O_APPEND from /proc/TID/fdinfo, the same bytes read from /proc/TID/mem, the same flags), and
SIGKILLs the start while the caller still waits for the answer it never gets. The file system is left as the
caller's own call would have left it, and the caller never learns the call returned: exact, for every write-
type call of store_writes.py. (A write the kernel would have cut short, on a full disk, is made whole or
fails whole here.)

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
AT_FDCWD, AT_REMOVEDIR = -100, 0x200
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


def perform(tid: int, syscall: str, args: tuple[int, ...]) -> None:
    """Make the waiting call's change to the file system from the gate: an after-point's kill then follows a
    call that is done and that its caller never saw return. An OSError is the call failing, as it would have."""
    libc = ctypes.CDLL(None, use_errno=True)
    paths = named(tid, syscall, args)
    if syscall in ("rename", "renameat", "renameat2"):
        flags = args[4] if syscall == "renameat2" else 0
        if libc.syscall(NUMBERS["renameat2"], AT_FDCWD, paths[0].encode(), AT_FDCWD, paths[1].encode(), flags):
            raise OSError(ctypes.get_errno(), syscall)
        return
    if syscall in ("unlink", "unlinkat"):
        (os.rmdir if syscall == "unlinkat" and args[2] & AT_REMOVEDIR else os.unlink)(paths[0])
        return
    if syscall == "truncate":
        os.truncate(paths[0], args[1])
        return
    fd_path = f"/proc/{tid}/fd/{ctypes.c_int(args[0]).value}"
    position, append = _open_state(tid, ctypes.c_int(args[0]).value)
    mode = os.O_RDONLY if syscall in ("fsync", "fdatasync", "sync_file_range") else os.O_WRONLY
    fd = os.open(fd_path, mode | (os.O_APPEND if append and mode == os.O_WRONLY else 0))
    try:
        if syscall in ("fsync", "fdatasync"):
            (os.fsync if syscall == "fsync" else os.fdatasync)(fd)
        elif syscall == "sync_file_range":
            libc.syscall(NUMBERS[syscall], fd, ctypes.c_int64(args[1]), ctypes.c_int64(args[2]), ctypes.c_uint(args[3]))
        elif syscall == "ftruncate":
            os.ftruncate(fd, args[1])
        elif syscall == "fallocate":
            if libc.syscall(NUMBERS[syscall], fd, ctypes.c_int(args[1]), ctypes.c_int64(args[2]),
                            ctypes.c_int64(args[3])):
                raise OSError(ctypes.get_errno(), syscall)
        else:  # write, pwrite64, writev, pwritev, pwritev2: the bytes from the caller's memory
            data = _bytes(tid, syscall, args)
            offset = args[3] if syscall in ("pwrite64", "pwritev", "pwritev2") else -1
            if syscall == "pwritev2" and ctypes.c_int64(offset).value == -1:
                offset = -1  # pwritev2 at -1 writes at the file's position, as writev does
            if offset == -1 and append:
                os.write(fd, data)
            else:
                os.pwrite(fd, data, position if offset == -1 else offset)
    finally:
        os.close(fd)


def _open_state(tid: int, fd: int) -> tuple[int, bool]:
    """The caller's open file's offset and whether it appends (/proc/TID/fdinfo/FD: `pos:` and octal `flags:`)."""
    fields = {}
    with open(f"/proc/{tid}/fdinfo/{fd}", encoding="ascii") as info:
        for line in info:
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    return int(fields.get("pos", "0")), bool(int(fields.get("flags", "0"), 8) & os.O_APPEND)


def _bytes(tid: int, syscall: str, args: tuple[int, ...]) -> bytes:
    """What a write-type call writes, read from the caller's memory: one buffer, or an iovec array's."""
    with open(f"/proc/{tid}/mem", "rb", buffering=0) as memory:
        if syscall in ("write", "pwrite64"):
            memory.seek(args[1])
            return memory.read(args[2])
        memory.seek(args[1])
        vectors = memory.read(16 * args[2])
        data = b""
        for base, length in struct.iter_unpack("QQ", vectors):
            memory.seek(base)
            data += memory.read(length)
        return data


def supervise(listener: int, syscall: str, when: int, target: str, after: bool = False,
              like: tuple[str, ...] = ()) -> None:
    """Answer every call the filter sends; at the `when`-th naming `target` (or a file a `like` pattern matches:
    `target`'s temporary files, `w2:into:FILE`), kill the start with it waiting. Returns when no process is left
    under the filter (the listener hangs up)."""
    import fcntl
    import re
    import select

    patterns = [re.compile(pattern) for pattern in like]

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
        files = named(tid, syscall, args)
        if target in files or any(p.fullmatch(file) for p in patterns for file in files):
            seen += 1
            if seen == when:
                write_gate.locate(tid)
                if after:
                    try:
                        perform(tid, syscall, args)
                    except (OSError, IndexError, ValueError) as error:  # the call failing, as it may have anyway
                        # (or a file the caller can write only through its own descriptor: said, not hidden)
                        print(f"killtest's file gate: the aimed {syscall} failed when made for the start: {error}",
                              file=sys.stderr, flush=True)
                write_gate.kill_start()  # the call is still waiting: it never runs (or, --after, never returns)
        try:
            fcntl.ioctl(listener, NOTIF_SEND, struct.pack("QqiI", ident, 0, 0, FLAG_CONTINUE))
        except OSError:
            pass  # the caller died while we looked


def main(argv: list[str]) -> None:
    split = argv.index("--")
    after = argv[0] == "--after"  # kill once the k-th call is done (the gate makes it), not before it
    syscall, when, target, *rest = argv[1 if after else 0:split]
    like = tuple(rest[1::2])  # `--like PATTERN`, each: a temporary file of TARGET, under a name no start repeats
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
        supervise(fds[0], syscall, int(when), os.path.normpath(target), after, like)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        os.kill(os.getpid(), os.WTERMSIG(status))  # the start's signal, as the runner would have seen it
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main(sys.argv[1:])
