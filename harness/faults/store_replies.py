"""A store server's replies, framed and counted: what the command proxy waits for before an after-point's kill.

An after twin of a server store's write (`aw7`, `aw7:c2`: harness/faults/points/after_store_write.py) kills the
start once the server has answered that command, so the command is applied, and before the start reads the
answer. The proxy (harness/faults/command_gate.py) therefore splits each connection's server-to-client stream
into whole replies and counts them against the client's messages that are owed one (`owed`):
- Redis: one reply per command (a command queued in MULTI gets `+QUEUED`, EXEC its array), in order; a RESP3
  push (`>`) is out of band and an attribute (`|`) comes before its reply: neither counts;
- PostgreSQL: one ReadyForQuery ('Z') per StartupMessage, simple Query ('Q') and Sync ('S'): the extended
  protocol's Parse/Bind/Execute run as they come, but their implicit transaction commits at the Sync, whose
  'Z' says it did; an SSLRequest or GSSENCRequest is answered by one byte, not a message.
Pure functions of bytes, no I/O; standard library only (the proxy runs by path with `-S`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

SSL_OR_GSS = {80877103, 80877104}  # SSLRequest, GSSENCRequest: answered with one byte ('S', 'N' or 'G')
_BULKS = b"$!="  # a length, then that many bytes
_AGGREGATES = b"*~>"  # a count of values (a push `>` too, which is no reply)


def owed(kind: str, data: bytes) -> int:
    """How many replies the server owes for one client message (store_commands.Message.data)."""
    if kind == "redis":
        return 1
    if data[:1] in (b"Q", b"S"):
        return 1
    if len(data) >= 8 and data[:1] == b"\0":  # the startup phase: length first, no type byte
        return 1  # a StartupMessage ends in 'Z'; an SSLRequest in its one byte (`PostgresReplies.ssl_pending`)
    return 0


def _resp_end(buffer: bytes, at: int) -> tuple[int, int] | None:
    """(end, type byte) of the RESP value starting at `at`; None while it is incomplete."""
    line_end = buffer.find(b"\r\n", at)
    if line_end < 0:
        return None
    kind = buffer[at]
    if kind not in _BULKS + _AGGREGATES + b"%|":
        return line_end + 2, kind  # a line: a status, an error, a number (or an old server's inline error)
    size = int(buffer[at + 1:line_end])
    if kind in _BULKS:
        end = line_end + 2 + (size + 2 if size >= 0 else 0)
        return (end, kind) if len(buffer) >= end else None
    pos = line_end + 2
    for _ in range(size * 2 if kind in b"%|" else max(size, 0)):  # a map or attribute: key and value each
        found = _resp_end(buffer, pos)
        if found is None:
            return None
        pos = found[0]
    return pos, kind


@dataclass
class RedisReplies:
    """One connection's replies from Redis: `feed` returns the byte ends of the whole replies in `buffer`."""

    def feed(self, buffer: bytes) -> tuple[list[int], int]:
        """The end offset of each whole reply at the start of `buffer`, and how many bytes are whole values."""
        ends: list[int] = []
        at = 0
        while at < len(buffer):
            found = _resp_end(buffer, at)
            if found is None:
                break
            at, kind = found
            if kind not in b">|":  # a push is out of band; an attribute precedes its reply
                ends.append(at)
        return ends, at


@dataclass
class PostgresReplies:
    """One connection's replies from PostgreSQL: a reply ends with ReadyForQuery, or is an SSL request's byte."""

    ssl_pending: int = 0  # SSL or GSSENC requests forwarded whose one-byte answer has not come

    def feed(self, buffer: bytes) -> tuple[list[int], int]:
        ends: list[int] = []
        at = 0
        while at < len(buffer):
            if self.ssl_pending:
                self.ssl_pending -= 1
                at += 1
                ends.append(at)
                continue
            if len(buffer) - at < 5:
                break
            (length,) = struct.unpack_from("!i", buffer, at + 1)
            if len(buffer) - at < 1 + length:
                break
            kind = buffer[at:at + 1]
            at += 1 + length
            if kind == b"Z":
                ends.append(at)
        return ends, at

    def forwarded(self, data: bytes) -> None:
        """Note a client message that asks for the one-byte answer."""
        if len(data) == 8 and struct.unpack_from("!ii", data)[1] in SSL_OR_GSS:
            self.ssl_pending += 1


def replies_for(kind: str) -> RedisReplies | PostgresReplies:
    """A fresh reply framer for one connection to a `postgres` or `redis` store."""
    return PostgresReplies() if kind == "postgres" else RedisReplies()
