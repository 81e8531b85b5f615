"""A server store's writes: the bytes a real psycopg and redis-py session send to the private servers,
framed and counted (harness/faults/store_commands.py), and the proxy (harness/faults/command_gate.py)
that kills a start before its n-th statement reaches the server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading

import psutil
import pytest

from killtest.harness.faults.points.store_write import COMMAND_GATE
from killtest.harness.faults.store_commands import (
    PostgresFramer,
    RedisFramer,
    first_keyword,
    parse_command_log,
    per_connection,
    probe_says_it_writes,
    proxied_dsn,
    resp,
    sql_counts,
    stable_writes,
)
from killtest.harness.servers.common import REQUIRE_SERVERS_VARIABLE, ServerUnavailable, servers_required
from killtest.harness.servers.private_postgres import PrivatePostgres
from killtest.harness.servers.private_redis import PrivateRedis


def started(server_class):
    try:
        return server_class().start()
    except ServerUnavailable as missing:
        if servers_required():
            pytest.fail(f"{missing} ({REQUIRE_SERVERS_VARIABLE} is set, so a missing server fails)")
        pytest.skip(str(missing))


@pytest.fixture(scope="module")
def postgres():
    server = started(PrivatePostgres)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def redis_server():
    server = started(PrivateRedis)
    yield server
    server.stop()


class Tap:
    """A plain relay on 127.0.0.1 that keeps every byte the client sent: what a real session put on the wire."""

    def __init__(self, dsn: str) -> None:
        authority = dsn.split("://", 1)[1].split("/", 1)[0].rpartition("@")[2]
        host, _, port = authority.rpartition(":")
        self.upstream = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.dsn = proxied_dsn(dsn, self.listener.getsockname()[1])
        self.sent = bytearray()
        self.threads: list[threading.Thread] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        client, _ = self.listener.accept()
        server = socket.create_connection(self.upstream)
        for source, sink, keep in ((client, server, True), (server, client, False)):
            thread = threading.Thread(target=self._pump, args=(source, sink, keep), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _pump(self, source: socket.socket, sink: socket.socket, keep: bool) -> None:
        while data := source.recv(65536):
            if keep:
                self.sent += data
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)

    def close(self) -> bytes:
        for thread in self.threads:
            thread.join(timeout=10)
        self.listener.close()
        return bytes(self.sent)


def framed(framer, data: bytes, chunk: int):
    """The messages of `data` fed to `framer` `chunk` bytes at a time, as a proxy reads a socket."""
    messages, pending = [], b""
    for at in range(0, len(data), chunk):
        pending += data[at:at + chunk]
        found, used = framer.feed(pending)
        messages += found
        pending = pending[used:]
    assert pending == b"", "bytes left that frame no message"
    return messages


PSYCOPG_SESSION = """
import psycopg
with psycopg.connect({dsn!r}, autocommit=True) as db:
    db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
    db.execute("INSERT INTO t VALUES (%s, %s)", (1, "one"))
    db.execute("SELECT v FROM t WHERE k = %s", (1,)).fetchone()
    with db.transaction():
        db.execute("UPDATE t SET v = %s WHERE k = %s", ("uno", 1))
        db.execute("SHOW server_version")
    with db.cursor() as cursor:
        cursor.executemany("INSERT INTO t VALUES (%s, %s)", [(2, "two"), (3, "three")])
"""


@pytest.mark.slow
def test_a_real_psycopg_session_frames_into_its_statements_and_counts_the_writes(postgres):
    tap = Tap(postgres.fresh_database())
    subprocess.run([sys.executable, "-c", PSYCOPG_SESSION.format(dsn=tap.dsn)], check=True, timeout=60)
    data = tap.close()
    whole = framed(PostgresFramer(), data, len(data))
    assert b"".join(m.data for m in whole) == data  # every byte is in one message, in order
    for chunk in (1, 7, 100):  # however the socket splits the stream, the same messages
        assert [(m.data, m.counted) for m in framed(PostgresFramer(), data, chunk)] == \
            [(m.data, m.counted) for m in whole]
    counted = [m.label.split()[:2] for m in whole if m.counted]
    # CREATE, INSERT, UPDATE, COMMIT, and executemany's two Executes; not SELECT, SHOW or BEGIN.
    assert counted == [["Q", "CREATE"], ["E", "INSERT"], ["E", "UPDATE"], ["Q", "COMMIT"],
                       ["E", "INSERT"], ["E", "INSERT"]], [m.label for m in whole]
    assert any(m.label.startswith(("Q BEGIN", "E BEGIN")) and not m.counted for m in whole)
    assert whole[0].label == "startup" and not whole[0].counted


REDIS_SESSION = """
import redis
client = redis.Redis.from_url({dsn!r})
client.set("a", 1)
client.get("a")
client.hset("records", "x", "{{}}")
client.hgetall("records")
with client.pipeline(transaction=True) as pipe:
    pipe.incr("n").sadd("s", "m").execute()
client.eval("return redis.call('SET', KEYS[1], ARGV[1])", 1, "b", "2")
client.close()
"""


def test_a_real_redis_py_session_frames_into_its_commands_and_counts_the_writes(redis_server):
    tap = Tap(redis_server.fresh_database())
    subprocess.run([sys.executable, "-c", REDIS_SESSION.format(dsn=tap.dsn)], check=True, timeout=60)
    data = tap.close()
    whole = framed(RedisFramer(), data, len(data))
    assert b"".join(m.data for m in whole) == data
    for chunk in (1, 5, 64):
        assert [(m.data, m.counted) for m in framed(RedisFramer(), data, chunk)] == \
            [(m.data, m.counted) for m in whole]
    counted = [m.label.split()[0].upper() for m in whole if m.counted]
    assert counted == ["SET", "HSET", "EXEC", "EVAL"], [m.label for m in whole]  # MULTI's INCR, SADD: at EXEC


def test_the_first_keyword_skips_comments_and_parentheses_and_reads_do_not_count():
    assert first_keyword("  -- a note\n/* more */ (select 1)") == "SELECT"
    assert not sql_counts("SELECT pg_advisory_xact_lock(5)") and not sql_counts("begin") and not sql_counts("")
    assert sql_counts("WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x") and sql_counts("COMMIT")
    assert proxied_dsn("postgresql://killtest@127.0.0.1:5432/run_1", 999) == "postgresql://killtest@127.0.0.1:999/run_1"
    assert proxied_dsn("redis://127.0.0.1:6379/0", 7) == "redis://127.0.0.1:7/0"


WRITER = """
import sys, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as db:
    db.execute("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY)")
    for k in range(1, 11):
        db.execute("SELECT count(*) FROM t").fetchone()
        db.execute("INSERT INTO t VALUES (%s)", (k,))
"""


def gate(mode: str, argument: str, dsn: str, program: str) -> tuple[int, str]:
    """The proxy around a Python program given the DSN as its argument, in a session of its own (as a start):
    its exit status and stderr, once no process of that session is left."""
    process = subprocess.Popen([sys.executable, "-S", COMMAND_GATE, mode, argument, dsn, "--", sys.executable, "-c",
                                program, dsn], start_new_session=True, stderr=subprocess.PIPE)
    _, stderr = process.communicate(timeout=60)
    left = [p.pid for p in psutil.process_iter() if _group_of(p.pid) == process.pid]
    assert left == [], "the start left processes behind"
    return process.returncode, stderr.decode()


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def rows(dsn: str) -> list[int]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        return [k for (k,) in db.execute("SELECT k FROM t ORDER BY k")]


@pytest.mark.parametrize("n", [2, 5, 11])
def test_the_proxy_kills_the_start_before_its_nth_statement_reaches_the_server(postgres, n):
    dsn = postgres.fresh_database()
    status, stderr = gate("kill", str(n), dsn, WRITER)
    assert status == -signal.SIGKILL, stderr[-500:]
    # Statement 1 creates the table, statement k+1 inserts k: the n-th never ran, the ones before all did.
    assert rows(dsn) == list(range(1, n - 1))


def test_a_start_with_fewer_statements_runs_to_the_end_and_a_recording_lists_them(postgres, tmp_path):
    dsn = postgres.fresh_database()
    assert gate("kill", "50", dsn, WRITER)[0] == 0
    assert rows(dsn) == list(range(1, 11))
    log = tmp_path / "statements.log"
    assert gate("record", str(log), postgres.fresh_database(), WRITER)[0] == 0
    recorded = parse_command_log(log.read_text())
    assert len(recorded) == 11 and recorded[0][1].split()[1] == "CREATE"
    assert all(label.startswith("E INSERT") for _, label in recorded[1:])


def test_the_proxy_kills_before_the_nth_redis_write_and_reads_and_reading_scripts_do_not_count(redis_server):
    import redis

    program = textwrap.dedent("""
        import sys, redis
        client = redis.Redis.from_url(sys.argv[1])
        for k in range(10):
            client.get(f"k{k}")
            client.eval("return redis.call('EXISTS', KEYS[1])", 1, f"k{k}")  # a script that only reads
            client.set(f"k{k}", k)
    """)
    dsn = redis_server.fresh_database()
    assert gate("kill", "4", dsn, program)[0] == -signal.SIGKILL
    with redis.Redis.from_url(dsn) as client:
        assert sorted(key.decode() for key in client.keys("k*")) == ["k0", "k1", "k2"]


def test_a_statement_is_offered_when_its_connection_sent_the_same_ones_before_it_on_both_recordings():
    first = [(1, "SADD a"), (2, "EVALSHA add"), (3, "EVALSHA poll"), (1, "EVAL save"), (3, "EVALSHA poll"),
             (1, "SADD done")]
    # A timer on connection 3 polled once more on the second start, and earlier: its 2nd is not the same.
    second = [(1, "SADD a"), (3, "EVALSHA poll"), (2, "EVALSHA add"), (3, "EVALSHA renew"), (1, "EVAL save"),
              (1, "SADD done")]
    assert stable_writes(first, second) == [1, 2, 3, 4, 6]
    assert per_connection(first) == [(1, 1), (2, 1), (3, 1), (1, 2), (3, 2), (1, 3)]


def test_the_proxy_kills_at_one_connections_kth_write_whatever_the_others_send(redis_server):
    import redis

    # Two connections, the second writing on a timer of its own: the first's 3rd write is the same one
    # every time; its place among all the start's writes is not.
    program = textwrap.dedent("""
        import sys, threading, time, redis
        ticker = redis.Redis.from_url(sys.argv[1])
        ticker.incr("ticks")
        def tick():
            while True:
                ticker.incr("ticks")
                time.sleep(0.001)
        threading.Thread(target=tick, daemon=True).start()
        client = redis.Redis.from_url(sys.argv[1])
        for k in range(6):
            time.sleep(0.01)
            client.set(f"k{k}", k)
    """)
    for _ in range(2):
        dsn = redis_server.fresh_database()
        assert gate("kill", "2:3", dsn, program)[0] == -signal.SIGKILL
        with redis.Redis.from_url(dsn) as client:
            assert sorted(key.decode() for key in client.keys("k*")) == ["k0", "k1"]


def test_a_script_call_counts_when_its_read_only_twin_is_refused_at_a_write(redis_server):
    import redis

    with redis.Redis.from_url(redis_server.fresh_database()) as client:
        client.set("a", 1)
        writes = RedisFramer().feed(resp([b"EVAL", b"redis.call('SET', KEYS[1], 2) return 1", b"1", b"a"]))[0][0]
        reads = RedisFramer().feed(resp([b"EVAL", b"return redis.call('GET', KEYS[1])", b"1", b"a"]))[0][0]
        answers = []
        for message in (writes, reads):
            with socket.create_connection(("127.0.0.1", redis_server.port)) as side:
                side.sendall(message.probe)
                answers.append(side.recv(4096))
        assert [probe_says_it_writes(answer) for answer in answers] == [True, False], answers
        assert client.get("a") == b"1"  # the probe stopped at the write: nothing changed
