"""Which process made a loopback TCP connection: the worker a request is credited to.

The doors (killtest.fixture_site.doors) tell starts apart; the workers of one start share a door, so
the site asks the kernel, at accept time, who holds the client's end of each connection:

1. the client socket's inode, by its exact address pair, from the kernel's socket diagnostics
   (netlink `SOCK_DIAG_BY_FAMILY`, an `inet_diag_req_v2` naming one socket: what `ss` uses; it
   needs no privilege and costs about 20 µs, where reading /proc/net/tcp costs milliseconds once
   a few thousand sockets sit in TIME_WAIT);
2. the worker whose process holds that inode among its open files (`/proc/<pid>/fd`): each worker's
   own process first, then the processes it started (a browser, a shell's curl): every member of
   the worker's own cgroup when the harness gave it one (killtest.harness.cgroups), which holds a
   browser's network process even after it left the worker's process tree; else its descendants.

A connection whose client is already gone (killed between connecting and the site's accept) has no
owner to find: None, and the checker falls back to timing for it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
from collections.abc import Iterable

import psutil

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_ALL_STATES = 0xFFFFFFFF
_NO_COOKIE = 0xFFFFFFFF
_NLMSG_HEADER = struct.Struct("=IHHII")  # length, type, flags, sequence, port id
_DIAG_REQUEST = struct.Struct("=BBBBI")  # family, protocol, extensions, pad, states
_DIAG_MESSAGE_AT = _NLMSG_HEADER.size + 4 + 48  # after the header, family/state/timer/retrans and the socket id
_DIAG_MESSAGE = struct.Struct("=IIIII")  # expires, receive queue, send queue, uid, inode


def _socket_id(local: tuple[str, int], remote: tuple[str, int]) -> bytes:
    """`struct inet_diag_sockid` for one IPv4 socket: ports and addresses in network order, no cookie."""
    return (struct.pack("!HH", local[1], remote[1]) + socket.inet_aton(local[0]) + bytes(12)
            + socket.inet_aton(remote[0]) + bytes(12) + struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE))


def client_inode(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The inode of the socket at `client` connected to `server` (IPv4), or None if there is none."""
    try:
        request = _DIAG_REQUEST.pack(socket.AF_INET, socket.IPPROTO_TCP, 0, 0, _ALL_STATES) + _socket_id(client, server)
    except (OSError, struct.error, TypeError, IndexError):
        return None  # not an IPv4 address pair
    header = _NLMSG_HEADER.pack(_NLMSG_HEADER.size + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0)
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as diag:
            diag.settimeout(1.0)
            diag.sendto(header + request, (0, 0))
            answer = diag.recv(8192)
    except OSError:
        return None
    if len(answer) < _DIAG_MESSAGE_AT + _DIAG_MESSAGE.size:
        return None  # an error message: no such socket
    if _NLMSG_HEADER.unpack_from(answer)[1] != _SOCK_DIAG_BY_FAMILY:
        return None
    inode = _DIAG_MESSAGE.unpack_from(answer, _DIAG_MESSAGE_AT)[4]
    return inode or None  # 0: an orphan, its process gone


def _holds(pid: int, target: str) -> bool:
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return True
    return False


def owner(client: tuple[str, int], server: tuple[str, int], workers: Iterable[int]) -> int | None:
    """The pid, one of `workers`, of the worker whose process (or a process it started) holds the
    client's end of the connection from `client` to `server`; None when no worker does (or it is gone)."""
    inode = client_inode(client, server)
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    leaders = list(workers)
    for pid in leaders:
        if _holds(pid, target):
            return pid
    for pid in leaders:  # a process a worker started: a browser, a shell's curl
        with contextlib.suppress(psutil.Error):
            if any(_holds(member, target) for member in family(pid) if member != pid):
                return pid
    return None


def family(pid: int) -> list[int]:
    """Every process worker `pid` made: the members of its cgroup when it is in a killtest box of its own
    (a cgroup named `killtest-*/...`), else its descendants."""
    box = _box_of(pid)
    if box is not None:
        with contextlib.suppress(OSError):
            with open(os.path.join(box, "cgroup.procs"), encoding="utf-8") as procs:
                return [int(line) for line in procs if line.strip()]
    return [child.pid for child in psutil.Process(pid).children(recursive=True)]


def _box_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as lines:
            path = next((line[3:].strip() for line in lines if line.startswith("0::")), "")
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            roots = [line.split()[1] for line in mounts if line.split()[2:3] == ["cgroup2"]]
    except OSError:
        return None
    if "/killtest-" not in path:
        return None  # the harness's own cgroup, shared with everything else: not the worker's
    return next((root + path for root in roots if os.path.exists(root + path)), None)
