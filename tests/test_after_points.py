"""After twins of store-write points (`aw5`, `aw2:FILE`, `aw7:c2`): their text, and each gate killing the start once
the step is done and before anything the program does next (harness/faults/points/after_store_write.py)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap

import psutil
import pytest

from killtest.harness.errors import KilltestError
from killtest.harness.faults.points import parse_point
from killtest.harness.faults.points.after_store_write import AfterStoreWrite, after_twin, before_twin
from killtest.harness.faults.points.store_write import COMMAND_GATE, FILE_GATE, GATE, AtStoreWrite
from killtest.harness.faults.schedule import parse_schedule
from killtest.harness.faults.store_replies import PostgresReplies, RedisReplies
from killtest.harness.servers.private_postgres import PrivatePostgres
from killtest.harness.servers.private_redis import PrivateRedis
from tests.test_store_commands import started  # a private server, or the one-line skip (a failure in CI)

needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")


@pytest.mark.parametrize("text", ["aw5", "aw2:storage/datasets/7.json", "aw7:c2", "aw1:./c2"])
def test_an_after_point_reads_back_as_written_and_is_its_before_points_twin(text):
    point = parse_point(text)
    assert isinstance(point, AfterStoreWrite) and isinstance(point, AtStoreWrite)
    assert parse_point(point.spec) == point
    assert point.spec == "a" + before_twin(point).spec
    assert after_twin(before_twin(point)) == point
    assert parse_schedule(f"r2,{text}").points[1] == point


def test_a_file_named_like_a_connection_is_a_file_and_the_twins_differ():
    assert parse_point("aw1:./c2").file == "c2" and parse_point("aw1:./c2").spec == "aw1:./c2"
    assert parse_point("aw1:c2").connection == 2
    assert parse_point("w5") != parse_point("aw5")


@pytest.mark.parametrize("text", ["xaw5", "xaw2:storage/datasets/7.json"])
def test_a_power_cut_after_a_write_is_the_after_twin_with_the_cut(text):
    from killtest.harness.faults.points.power_cut import PowerCutAfterStoreWrite

    point = parse_point(text)
    assert isinstance(point, PowerCutAfterStoreWrite) and point.MODE == "after" and point.needs_power_loss_mount
    assert point.spec == text and parse_point(point.spec) == point


@pytest.mark.parametrize("text", ["aw0", "aw", "a5", "aw5:", "aw5:/etc/x", "aw5:../x", "aw5@2"])
def test_a_malformed_after_point_is_one_line_naming_the_form(text):
    with pytest.raises(KilltestError) as error:
        parse_point(text)
    assert "aw<store write number>" in str(error.value) and "\n" not in str(error.value)


def test_the_reply_framers_count_whole_replies_only():
    redis = RedisReplies()
    stream = b"+OK\r\n$3\r\nabc\r\n*2\r\n:1\r\n$-1\r\n>2\r\n+a\r\n+b\r\n*1\r\n+x"
    assert redis.feed(stream) == ([5, 14, 27], 39)  # the push is whole but no reply; the last array is cut
    postgres = PostgresReplies()
    postgres.forwarded(b"\0\0\0\x08\x04\xd2\x16\x2f")  # an SSLRequest: answered by one byte
    complete = b"N" + b"C\0\0\0\x0bINSERT\0" + b"Z\0\0\0\x05I"
    assert postgres.feed(complete + b"Z\0\0") == ([1, len(complete)], len(complete))


def session_left(pid: int) -> list[int]:
    found = []
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == pid:
                found.append(process.pid)
        except ProcessLookupError:
            pass
    return found


def under(gate: list[str], program: str, *args: str) -> tuple[int, str]:
    """A Python program under a gate, in a session of its own (as a start): its status and its stderr."""
    process = subprocess.Popen([*gate, "--", sys.executable, "-c", textwrap.dedent(program), *args],
                               start_new_session=True, stderr=subprocess.PIPE)
    _, stderr = process.communicate(timeout=120)
    assert session_left(process.pid) == [], "the start left processes behind"
    return process.returncode, stderr.decode()


# Writes records 1..5 to a log, each followed by a line on stderr: the program's next step after the write.
APPEND = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for i in range(1, 6):
    os.write(fd, b"%d\\n" % i)
    os.write(2, b"saw %d\\n" % i)
"""


@needs_strace
@pytest.mark.parametrize("n", [1, 3, 5])
def test_the_write_gate_kills_after_the_nth_write_returned_and_before_the_program_went_on(tmp_path, n):
    log = tmp_path / "log.txt"
    for after, kept in ((False, n - 1), (True, n)):
        log.unlink(missing_ok=True)
        gate = [sys.executable, "-S", GATE, *(["--after"] if after else []), "write", str(n), str(log)]
        status, stderr = under(gate, APPEND, str(log))
        assert status == -signal.SIGKILL, stderr[-400:]
        assert log.read_text().split() == [str(i) for i in range(1, kept + 1)]
        assert [line for line in stderr.splitlines() if line.startswith("saw")] == [f"saw {i}" for i in range(1, n)]


# Saves each record atomically (a temporary file renamed over data.json), then marks it done in a second file.
RENAME = """
import os, sys
for i in range(1, 4):
    with open("d.tmp", "w") as out:
        out.write(str(i))
    os.replace("d.tmp", "data.json")
    with open("done.txt", "a") as out:
        out.write(f"{i}\\n")
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the file gate's filter names x86_64 calls")
@pytest.mark.parametrize("k", [1, 2, 3])
def test_the_file_gate_makes_the_kth_call_itself_and_kills_before_the_caller_sees_it_return(tmp_path, k,
                                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)  # the program under the gate names its files relative to it; restored after
    for after in (False, True):
        for name in ("data.json", "done.txt", "d.tmp"):
            (tmp_path / name).unlink(missing_ok=True)
        gate = [sys.executable, "-S", FILE_GATE, *(["--after"] if after else []), "rename", str(k),
                str(tmp_path / "data.json")]
        status, stderr = under(gate, RENAME)
        assert status == -signal.SIGKILL, stderr[-400:]
        saved = (tmp_path / "data.json").read_text() if (tmp_path / "data.json").exists() else None
        assert saved == (str(k) if after else (str(k - 1) if k > 1 else None))
        assert not (tmp_path / "d.tmp").exists() if after else (tmp_path / "d.tmp").exists()
        done = (tmp_path / "done.txt").read_text().split() if (tmp_path / "done.txt").exists() else []
        assert done == [str(i) for i in range(1, k)]  # the step after the kth rename never came


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the file gate's filter names x86_64 calls")
def test_the_file_gate_appends_the_kth_write_at_the_files_end_as_the_caller_would_have(tmp_path):
    log = tmp_path / "log.txt"
    for after, kept in ((False, 2), (True, 3)):
        log.unlink(missing_ok=True)
        gate = [sys.executable, "-S", FILE_GATE, *(["--after"] if after else []), "write", "3", str(log)]
        status, stderr = under(gate, APPEND, str(log))
        assert status == -signal.SIGKILL, stderr[-400:]
        assert log.read_text() == "".join(f"{i}\n" for i in range(1, kept + 1))
        assert [line for line in stderr.splitlines() if line.startswith("saw")] == ["saw 1", "saw 2"]


@pytest.fixture(scope="module")
def redis_server():
    server = started(PrivateRedis)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def postgres():
    server = started(PrivatePostgres)
    yield server
    server.stop()


# Pipelined and plain commands: a read, a write, and a line on stderr once the write's answer came back.
REDIS_WRITER = """
import sys, redis
client = redis.Redis.from_url(sys.argv[1])
for k in range(6):
    client.get(f"k{k}")
    client.set(f"k{k}", k)
    print(f"acked {k}", file=sys.stderr, flush=True)
"""


@pytest.mark.parametrize("n", [1, 4, 6])
def test_the_command_gate_after_mode_applies_the_nth_write_and_kills_before_the_client_reads_its_reply(
        redis_server, n):
    import redis

    for mode, kept in (("kill", n - 1), ("after", n)):
        dsn = redis_server.fresh_database()
        status, stderr = under([sys.executable, "-S", COMMAND_GATE, mode, str(n), dsn], REDIS_WRITER, dsn)
        assert status == -signal.SIGKILL, stderr[-400:]
        with redis.Redis.from_url(dsn) as client:
            assert sorted(key.decode() for key in client.keys("k*")) == [f"k{k}" for k in range(kept)]
        assert [line for line in stderr.splitlines() if line.startswith("acked")] == [
            f"acked {k}" for k in range(n - 1)]


POSTGRES_WRITER = """
import sys, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as db:
    db.execute("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY)")
    for k in range(1, 6):
        db.execute("INSERT INTO t VALUES (%s)", (k,))
        print(f"acked {k}", file=sys.stderr, flush=True)
"""


def test_the_command_gate_after_mode_waits_for_the_statements_commit_on_postgres(postgres):
    import psycopg

    for mode, kept in (("kill", [1, 2]), ("after", [1, 2, 3])):  # statement 4 inserts 3
        dsn = postgres.fresh_database()
        status, stderr = under([sys.executable, "-S", COMMAND_GATE, mode, "4", dsn], POSTGRES_WRITER, dsn)
        assert status == -signal.SIGKILL, stderr[-400:]
        with psycopg.connect(dsn, autocommit=True) as db:
            assert [k for (k,) in db.execute("SELECT k FROM t ORDER BY k")] == kept
        assert "acked 3" not in stderr and "acked 2" in stderr


FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scraper_fixtures")


@pytest.mark.fault("aw")
@needs_strace
def test_explore_finds_the_duplicate_after_a_write_that_its_before_point_misses_and_its_replay_reproduces_it(
        tmp_path):
    """A crawler that appends each record to a JSON-lines file and only then marks its progress durable in a second
    file, promising no duplicates: killed after the record's write (`aw1`), the next start stores the record again;
    killed before it (`w1`), it does not. Explore offers each write's after twin next to it, counts them in its
    coverage, and the after point's replay line, pasted in another directory, reproduces the duplicate."""
    design = tmp_path / "mine"
    design.mkdir()
    for name in ("jsonl_then_progress.py", "jsonl_then_progress.toml"):
        shutil.copy(os.path.join(FIXTURES, name), design / name)
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", "jsonl_then_progress.toml",
                           "--listing-pages", "1", "--per-page", "2", "-j", "1", "--out", "out"],
                          capture_output=True, text=True, timeout=600, cwd=design)
    assert done.returncode == 1, done.stderr[-2000:]
    found = json.loads((design / "out" / "explore-jsonl-then-progress.json").read_text())
    outcomes = {o["point"]: o for o in found["outcomes"]}
    writes = [spec for spec in outcomes if spec.startswith("w")]
    assert writes == [f"w{n}" for n in range(1, 9)]  # per product: the record, its fsync, the progress, its fsync
    assert [spec for spec in outcomes if spec.startswith("aw")] == ["a" + spec for spec in writes]  # each its twin
    record_writes = [n for n in range(1, 9) if "records.jsonl" in outcomes[f"aw{n}"]["where"]
                     and "fsync" not in outcomes[f"aw{n}"]["where"]]
    assert record_writes == [1, 5]
    for n in record_writes:  # the record's own write: duplicated after it, never before it
        assert outcomes[f"w{n}"]["valid"] and outcomes[f"w{n}"]["landed"], outcomes[f"w{n}"]
        after = outcomes[f"aw{n}"]
        assert not after["valid"] and after["findings"] == ["extra_rows"] and after["keys"]["duplicated"], after
    assert outcomes["aw1"]["where"].startswith("after the 1st write to records.jsonl, 61 bytes")
    assert all(outcomes[f"aw{n}"]["valid"] for n in (4, 8))  # after the progress is durable: nothing repeats
    assert {w["file"]: (w["points"], w["after_points"]) for w in found["coverage"]["writes"]} == {
        "records.jsonl": (4, 4), "progress.txt": (4, 4)}
    assert "4 seen, 4 explored (and 4 after)" in done.stderr
    [replay] = [f["replay"] for f in found["failures"] if f["example"] == "aw1"]
    assert "--schedule aw1" in replay and str(design / "jsonl_then_progress.toml") in replay
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = subprocess.run([sys.executable, "-m", "killtest", *shlex.split(replay)[1:]], capture_output=True,
                           text=True, timeout=600, cwd=elsewhere)
    assert again.returncode == 1, again.stderr[-2000:]
    assert "3 rows for 2 products" in again.stderr and "broke no_duplicates" in again.stderr


@pytest.mark.parametrize("text,server", [("w3:redis", "redis"), ("aw3:redis", "redis"), ("aw2:postgres", "postgres")])
def test_a_declared_servers_command_is_a_point_and_a_file_named_redis_is_written_dot_slash(text, server):
    point = parse_point(text)
    assert point.server == server and point.file is None and parse_point(point.spec) == point
    assert after_twin(before_twin(point)) == after_twin(point)
    named = parse_point("aw1:./redis")
    assert named.file == "redis" and named.server is None and named.spec == "aw1:./redis"


def test_a_declared_servers_point_on_a_design_that_declares_none_is_one_line_naming_the_fix():
    from killtest.harness.design.specfile import load_spec

    plain = load_spec(os.path.join(FIXTURES, "jsonl_then_progress.toml"))
    with pytest.raises(KilltestError) as error:
        parse_point("aw2:redis").validate([plain], 1)
    assert "declares none: add `[servers] redis = {}` to its spec" in str(error.value)
    assert "\n" not in str(error.value)
    declared = load_spec(os.path.join(FIXTURES, "jsonl_then_redis.toml"))
    parse_point("aw2:redis").validate([declared], 1)  # no strace needed: the proxy counts the commands
    with pytest.raises(KilltestError, match="xw<store write number>"):
        parse_point("xw2:redis")  # a server's command has no power to cut: refused as a malformed point


@pytest.mark.fault("aw")
@needs_strace
def test_with_its_progress_in_a_declared_redis_the_record_writes_after_point_and_the_servers_points_find_it(
        tmp_path):
    """The same crawler with its progress in a Redis set its spec declares: the step after a record's write is a
    command to that server, no store write. The record's after-point and the server's command points (`w1:redis`,
    before the SADD) find the duplicate; the record's before-point and the SADD's after-point do not."""
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design",
                           os.path.join(FIXTURES, "jsonl_then_redis.toml"), "--listing-pages", "1", "--per-page", "2",
                           "-j", "1", "--out", "out"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    found = json.loads((tmp_path / "out" / "explore-jsonl-then-redis.json").read_text())
    outcomes = {o["point"]: o for o in found["outcomes"]}
    assert [p for p in outcomes if p.endswith(":redis")] == ["w1:redis", "aw1:redis", "w2:redis", "aw2:redis"]
    broken = {p for p, o in outcomes.items() if not o["valid"]}
    assert {"aw1", "aw3", "w1:redis", "w2:redis"} <= broken  # each record's write (w1, w3) and its SADD
    assert not broken & {"w1", "w3", "aw1:redis", "aw2:redis"}
    assert all(outcomes[p]["findings"] == ["extra_rows"] for p in broken)
    assert outcomes["w1:redis"]["where"].startswith("before write command 1 to the redis server")
    servers = [w for w in found["coverage"]["writes"] if "redis" in w["file"]]
    assert servers == [{"file": "the declared redis server (its write commands)", "seen": 2, "points": 2,
                        "after_points": 2, "left_out": 0}]


@pytest.mark.slow
@needs_strace
def test_a_feapder_style_crawler_repeats_its_batch_after_its_write_and_never_before_it(tmp_path):
    """Issue 43's crawler (tests/scraper_fixtures/feapder_style: requests in a declared Redis, items batched to a
    JSON-lines file, a request removed from Redis only after its batch is saved), held to no_duplicates: killed
    after its first batch's write (`aw1`) the next start saves the batch again; killed before it (`w1`), never. The
    step after that write is a command to Redis, no store write: only the after-point reaches the window."""
    design = os.path.join(FIXTURES, "feapder_style", "design-exactly-once.toml")
    done = subprocess.run([sys.executable, "-m", "killtest", "explore", "--design", design, "--only", "w1,aw1",
                           "--listing-pages", "1", "--per-page", "3", "-j", "1", "--out", "out"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    outcomes = {o["point"]: o for o in json.loads((tmp_path / "out" /
                                                   "explore-feapder-style-exactly-once.json").read_text())["outcomes"]}
    assert outcomes["w1"]["landed"] and outcomes["w1"]["valid"], outcomes["w1"]
    assert not outcomes["aw1"]["valid"] and outcomes["aw1"]["findings"] == ["extra_rows"], outcomes["aw1"]
    assert outcomes["aw1"]["where"].startswith("after the 1st write to items.jsonl")


@needs_strace
def test_fuzz_draws_a_store_write_before_it_and_after_it():
    from hypothesis import find

    from killtest.harness.campaigns.fuzz_schedules import kill_points, kill_schedules
    from killtest.harness.design.registry import design_named

    design = design_named("idempotent")
    before = find(kill_points(design, 5, [3, 7], [], exact_only=True), lambda point: type(point) is AtStoreWrite)
    assert before.spec in ("w3", "w7")
    after = find(kill_points(design, 5, [3, 7], [], exact_only=True), lambda point: isinstance(point, AfterStoreWrite))
    assert after.spec in ("aw3", "aw7")
    schedule = find(kill_schedules(design, 5, [3, 7], exact_only=True),
                    lambda s: any(type(p) is AtStoreWrite for p in s.points)
                    and any(isinstance(p, AfterStoreWrite) for p in s.points))
    assert parse_schedule(schedule.spec) == schedule  # a drawn schedule replays from its text



def test_an_after_point_that_reaches_the_next_writes_state_joins_its_failure_unless_a_declared_server_lies_between():
    from types import SimpleNamespace

    from killtest.harness.campaigns.exploration import PointOutcome
    from killtest.harness.campaigns.twin_states import join_twin_states, located_by_its_neighbour

    def outcomes():
        def broken(point, line="", place=""):
            return PointOutcome(point, True, False, ["dup"], 3, 5, findings=["extra_rows"], line=line, place=place)
        return [broken("w2", "mine.py:35", "before the fsync of r.jsonl"), broken("aw1", "", "after the write to r"),
                broken("aw2", "", "after the fsync of r.jsonl"), PointOutcome("w3", True, True, [], 2, 4),
                broken("aw3:redis"), broken("w9"), broken("aw8", "mine.py:50"), broken("w12", "", "before x"),
                broken("aw11", "", "after y")]

    alone = outcomes()
    join_twin_states(alone, SimpleNamespace(servers=()))
    got = {o.point: (o.line, o.place) for o in alone}
    assert got["aw1"] == ("mine.py:35", "before the fsync of r.jsonl")  # w2 broke alike: one crash state
    assert got["aw2"] == ("", "after the fsync of r.jsonl")  # w3 did not break: a state of its own
    assert got["aw8"] == ("mine.py:50", "")  # w9 broke alike but has no line: aw8 keeps its own
    assert got["aw11"] == ("", "before x")  # neither has a line: grouped by the next write's kind of place
    declared = outcomes()
    join_twin_states(declared, SimpleNamespace(servers=("redis",)))  # a command may lie between two writes
    assert {o.point: o.line for o in declared}["aw1"] == ""
    assert located_by_its_neighbour(parse_point("aw1"), SimpleNamespace(servers=()))
    assert not located_by_its_neighbour(parse_point("aw1:storage/x.json"), SimpleNamespace(servers=()))
    assert not located_by_its_neighbour(parse_point("aw1"), SimpleNamespace(servers=("redis",)))
