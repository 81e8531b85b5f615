"""A server store's writes: the statements (PostgreSQL) and commands (Redis) a start sends, framed and counted.

For a PostgreSQL or Redis store, "the n-th store write" (`w5`) is the n-th *counted* message the start
sends to the store's server, on all its connections, in the order the run's proxy
(harness/faults/command_gate.py) reads them. This module frames the client's byte stream into
messages and says which count; pure functions of bytes, no I/O.

What counts, PostgreSQL (frontend protocol v3):
- the startup phase (SSLRequest, GSSENCRequest, StartupMessage) is never counted;
- a simple Query ('Q') is one statement, even with several `;`-separated commands in it: the server
  runs it as one implicit transaction, so nothing can land between them;
- in the extended protocol, Parse ('P') names the text and Bind ('B') a portal of it; an Execute
  ('E') of a portal is one statement;
- a statement counts unless its first keyword is a read or session one (`READ_ONLY_SQL`: SELECT, SHOW,
  BEGIN, SET, ...): a kill just before a read is the kill just after the last write, so counting reads
  would only repeat points. COMMIT counts: it is the write that matters most. A `SELECT f()` that
  writes in f (nextval, an advisory lock) is not counted; `WITH ... INSERT` is.

What counts, Redis (RESP arrays, or inline commands): every command but the reads and connection
commands of `READ_ONLY_REDIS`; inside MULTI the queued commands do not count, EXEC counts once
(nothing lands before it). A script call (EVAL, EVALSHA, FCALL: BullMQ moves its jobs with them, and
polls with them) counts once when it would write: the wire does not say, so the proxy asks the server
first, running the same call as EVAL_RO (`probe`), which Redis refuses at the script's first write
command, before it changes anything (`probe_says_it_writes`). A poll that writes nothing is not counted.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

# PostgreSQL statements whose first keyword reads or sets the session: not counted.
READ_ONLY_SQL = frozenset({"SELECT", "SHOW", "BEGIN", "START", "SET", "RESET", "VALUES", "TABLE", "FETCH",
                           "EXPLAIN", "DECLARE", "LISTEN", "DISCARD", "DEALLOCATE"})
# Redis commands that change nothing stored: not counted.
READ_ONLY_REDIS = frozenset("""
GET MGET STRLEN GETRANGE SUBSTR EXISTS TYPE TTL PTTL EXPIRETIME PEXPIRETIME KEYS SCAN RANDOMKEY DBSIZE
HGET HMGET HGETALL HKEYS HVALS HLEN HEXISTS HSTRLEN HSCAN HRANDFIELD LRANGE LLEN LINDEX LPOS
SMEMBERS SISMEMBER SMISMEMBER SCARD SSCAN SRANDMEMBER SINTER SUNION SDIFF SINTERCARD
ZRANGE ZRANGEBYSCORE ZREVRANGE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX ZSCORE ZMSCORE ZCARD ZCOUNT
ZLEXCOUNT ZRANK ZREVRANK ZSCAN ZRANDMEMBER XRANGE XREVRANGE XLEN XINFO XPENDING XREAD BITCOUNT GETBIT
BITPOS PFCOUNT OBJECT DUMP MEMORY PING ECHO HELLO AUTH SELECT CLIENT INFO TIME COMMAND CONFIG SCRIPT
WATCH UNWATCH MULTI DISCARD EVAL_RO EVALSHA_RO FCALL_RO SUBSCRIBE PSUBSCRIBE UNSUBSCRIBE PUNSUBSCRIBE
PUBSUB QUIT RESET READONLY READWRITE WAIT LASTSAVE ROLE SLOWLOG LATENCY
""".split())

_SSL_OR_GSS = {80877103, 80877104}  # SSLRequest, GSSENCRequest: the startup phase goes on after them
_COMMENTS = re.compile(r"^(\s+|--[^\n]*\n?|/\*.*?\*/|\()", re.S)
_WORD = re.compile(r"[A-Za-z_]+")


@dataclass(frozen=True)
class Message:
    """One complete message of a client's stream: its bytes, whether it counts, and a short label."""

    data: bytes
    counted: bool
    label: str
    probe: bytes = b""  # a Redis script call: the read-only call that says whether it writes (counted if so)


SCRIPT_CALLS = {"EVAL": b"EVAL_RO", "EVALSHA": b"EVALSHA_RO", "FCALL": b"FCALL_RO"}
# What Redis answers a read-only script call that reaches a write command (src/script.c).


def resp(words: list[bytes]) -> bytes:
    """`words` as a RESP array of bulk strings: a command as clients send it."""
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)


def probe_says_it_writes(reply: bytes) -> bool:
    """Whether the script call must be counted as a write, from the server's reply to its `probe`: the
    refusal of a write, and any other error too (an older Redis without EVAL_RO, a server asking for
    AUTH, an unknown script), since a write missed would hide a crash point while one counted too many
    only adds a harmless one. A read-only script answers without an error: not counted."""
    return reply.startswith(b"-")


def first_keyword(sql: str) -> str:
    """The statement's first keyword, upper case, past whitespace, comments and opening parentheses."""
    rest = sql
    while True:
        found = _COMMENTS.match(rest)
        if found is None or not found.group(0):
            break
        rest = rest[found.end():]
    word = _WORD.match(rest)
    return word.group(0).upper() if word else ""


def sql_counts(sql: str) -> bool:
    """A statement counts as a store write unless it is empty or starts with a read or session keyword."""
    keyword = first_keyword(sql)
    return bool(keyword) and keyword not in READ_ONLY_SQL


def _label(text: str) -> str:
    return " ".join(text.split())[:60]


@dataclass
class PostgresFramer:
    """One client connection's stream to PostgreSQL, split into messages (`feed`), with its statement names."""

    startup: bool = True
    statements: dict[bytes, str] = field(default_factory=dict)  # prepared statement name -> its SQL
    portals: dict[bytes, str] = field(default_factory=dict)  # portal name -> the SQL it runs

    def feed(self, buffer: bytes) -> tuple[list[Message], int]:
        """The complete messages at the start of `buffer`, and how many bytes they take."""
        messages: list[Message] = []
        at = 0
        while True:
            message = self._one(buffer, at)
            if message is None:
                return messages, at
            messages.append(message)
            at += len(message.data)

    def _one(self, buffer: bytes, at: int) -> Message | None:
        if self.startup:
            if len(buffer) - at < 8:
                return None
            length, code = struct.unpack_from("!ii", buffer, at)
            if len(buffer) - at < length:
                return None
            self.startup = code in _SSL_OR_GSS
            return Message(buffer[at:at + length], False, "startup")
        if len(buffer) - at < 5:
            return None
        kind = buffer[at:at + 1]
        (length,) = struct.unpack_from("!i", buffer, at + 1)
        if len(buffer) - at < 1 + length:
            return None
        data = buffer[at:at + 1 + length]
        body = data[5:]
        if kind == b"Q":
            sql = body.split(b"\0", 1)[0].decode("utf-8", "replace")
            return Message(data, sql_counts(sql), "Q " + _label(sql))
        if kind == b"P":
            name, text, _ = body.split(b"\0", 2)
            self.statements[name] = text.decode("utf-8", "replace")
        elif kind == b"B":
            portal, statement, _ = body.split(b"\0", 2)
            self.portals[portal] = self.statements.get(statement, "")
        elif kind == b"E":
            sql = self.portals.get(body.split(b"\0", 1)[0], "")
            return Message(data, sql_counts(sql), "E " + _label(sql))
        return Message(data, False, kind.decode("latin-1"))


@dataclass
class RedisFramer:
    """One client connection's stream to Redis, split into commands (`feed`), MULTI blocks counted at EXEC."""

    in_multi: bool = False

    def feed(self, buffer: bytes) -> tuple[list[Message], int]:
        """The complete commands at the start of `buffer`, and how many bytes they take."""
        messages: list[Message] = []
        at = 0
        while True:
            parsed = _resp_command(buffer, at)
            if parsed is None:
                return messages, at
            words, end = parsed
            messages.append(self._message(buffer[at:end], words))
            at = end

    def _message(self, data: bytes, words: list[bytes]) -> Message:
        name = words[0].decode("latin-1").upper() if words else ""
        label = " ".join(w.decode("utf-8", "replace")[:40] for w in words[:2])
        if name == "MULTI":
            self.in_multi = True
            return Message(data, False, label)
        if name in ("EXEC", "DISCARD"):
            counted = name == "EXEC"
            self.in_multi = False
            return Message(data, counted, label)
        counted = bool(name) and not self.in_multi and name not in READ_ONLY_REDIS
        probe = resp([SCRIPT_CALLS[name], *words[1:]]) if counted and name in SCRIPT_CALLS else b""
        return Message(data, counted, label, probe)


def _resp_command(buffer: bytes, at: int) -> tuple[list[bytes], int] | None:
    """(words, end) of the command starting at `at`: a RESP array of bulk strings, or an inline command."""
    line_end = buffer.find(b"\r\n", at)
    if line_end < 0:
        return None
    if buffer[at:at + 1] != b"*":  # an inline command: words separated by spaces, one line
        return buffer[at:line_end].split(), line_end + 2
    count = int(buffer[at + 1:line_end])
    words, pos = [], line_end + 2
    for _ in range(count):
        line_end = buffer.find(b"\r\n", pos)
        if line_end < 0:
            return None
        if buffer[pos:pos + 1] != b"$":  # not a bulk string (no client sends one): the line itself
            words.append(buffer[pos + 1:line_end])
            pos = line_end + 2
            continue
        size = int(buffer[pos + 1:line_end])
        start = line_end + 2
        if len(buffer) < start + size + 2:
            return None
        words.append(buffer[start:start + size])
        pos = start + size + 2
    return words, pos


def framer_for(kind: str) -> PostgresFramer | RedisFramer:
    """A fresh framer for one connection to a `postgres` or `redis` store."""
    return PostgresFramer() if kind == "postgres" else RedisFramer()


def store_kind_of_dsn(dsn: str) -> str:
    """`postgres` or `redis`, from the scheme of the DSN the harness gave the start; ValueError otherwise."""
    scheme = dsn.split("://", 1)[0]
    if scheme in ("postgresql", "postgres"):
        return "postgres"
    if scheme in ("redis", "rediss"):
        return "redis"
    raise ValueError(f"no store-write framing for a {scheme!r} DSN")


def proxied_dsn(dsn: str, port: int) -> str:
    """The DSN with its host and port replaced by the proxy's loopback address."""
    scheme, rest = dsn.split("://", 1)
    authority, slash, path = rest.partition("/")
    user, at, _ = authority.rpartition("@")
    return f"{scheme}://{user}{at}127.0.0.1:{port}{slash}{path}"


def parse_command_log(text: str) -> list[tuple[int, str]]:
    """The counted messages of a `record` run of the gate, in order: (connection number, label)."""
    found = []
    for line in text.splitlines():
        number, connection, label = (line.split("\t", 2) + ["", ""])[:3]
        if number.isdigit() and connection.isdigit():
            found.append((int(connection), label))
    return found


def per_connection(recorded: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """(connection, its how-many-th counted message) of each recorded message, in order, 1-based."""
    counts: dict[int, int] = {}
    found = []
    for connection, _ in recorded:
        counts[connection] = counts.get(connection, 0) + 1
        found.append((connection, counts[connection]))
    return found


def stable_writes(first: list[tuple[int, str]], second: list[tuple[int, str]]) -> list[int]:
    """The n (1-based, in `first`) whose message is the same on both recordings of a start: the same
    connection's messages up to it are the same. The proxy can kill exactly there, counting that
    connection's messages; the others depend on how the start's connections interleave (timers)."""
    def prefixes(recorded: list[tuple[int, str]]) -> dict[int, list[str]]:
        by_connection: dict[int, list[str]] = {}
        for connection, label in recorded:
            by_connection.setdefault(connection, []).append(label)
        return by_connection

    one, other = prefixes(first), prefixes(second)
    return [n for n, (connection, k) in enumerate(per_connection(first), 1)
            if one[connection][:k] == other.get(connection, [])[:k]]
