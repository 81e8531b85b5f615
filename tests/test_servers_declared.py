"""A design declares the servers it keeps state in ([servers]), whatever its store: each run gets each one
private and fresh, its address in a placeholder; a placeholder no run could fill is a one-line spec error."""

import os
import subprocess
import sys
import textwrap

import psutil
import pytest

from killtest.harness.design.model import PLACEHOLDERS, PROJECT_ROOT, SERVER_PLACEHOLDERS, Launch
from killtest.harness.design.specfile import load_spec
from killtest.harness.errors import KilltestError
from killtest.harness.servers.common import REQUIRE_SERVERS_VARIABLE, ServerUnavailable, servers_required
from killtest.harness.servers.for_stores import SERVERS, StoreServers, servers_of

JSONL_STORE = """
[store]
kind = "jsonl"
path = "{work_dir}/records.jsonl"
"""


def write_spec(tmp_path, text, name="design.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return str(path)


def test_every_declarable_server_is_a_private_server_with_a_placeholder():
    assert set(SERVER_PLACEHOLDERS) == set(SERVERS)
    assert set(SERVER_PLACEHOLDERS.values()) <= set(PLACEHOLDERS)


def test_a_file_store_design_declares_redis_and_each_start_is_given_its_url(tmp_path):
    path = write_spec(tmp_path, """
        [design]
        name = "queue-in-redis"
        command = ["crawler", "--redis", "{redis_url}", "--out", "{store}"]
        env = { QUEUE = "{redis_url}" }

        [servers]
        redis = {}
        """ + JSONL_STORE)
    design = load_spec(path)
    assert design.servers == ("redis",) and servers_of(design) == ("redis",)
    launch = Launch("http://h:1", "/w", 1.0, servers=(("redis", "redis://127.0.0.1:6390/0"),))
    assert design.values(launch)["redis_url"] == "redis://127.0.0.1:6390/0"
    assert design.server_urls(launch) == {"redis": "redis://127.0.0.1:6390/0"}
    assert design.command(launch) == ["crawler", "--redis", "redis://127.0.0.1:6390/0", "--out", "/w/records.jsonl"]
    assert design.environment(launch)["QUEUE"] == "redis://127.0.0.1:6390/0"


def test_a_child_spec_inherits_the_servers_its_base_declares(tmp_path):
    write_spec(tmp_path, """
        [design]
        name = "base"
        command = ["crawler", "{redis_url}"]

        [servers]
        redis = {}
        """ + JSONL_STORE, "base.toml")
    child = write_spec(tmp_path, 'extends = "base.toml"\n[design]\nname = "child"\n', "child.toml")
    assert load_spec(child).servers == ("redis",)


@pytest.mark.parametrize(("text", "line", "message"), [
    # {dsn} beside a store kept in a file: it used to be filled with "" without a word
    ('[design]\nname = "d"\ncommand = ["c", "--redis", "{dsn}"]\n' + JSONL_STORE, 3,
     r"design.command uses \{dsn\}, but a jsonl store lives in a file, so no server's address fills it; a design"
     r" keeping state in a server declares it \(\[servers\] redis = \{\}\) and uses \{redis_url\}"),
    ('[design]\nname = "d"\ncommand = ["c"]\nenv = { Q = "{dsn}" }\n' + JSONL_STORE, 4,
     r"design.env uses \{dsn\}, but a jsonl store"),
    ('[design]\nname = "d"\ncommand = ["c", "{redis_url}"]\n' + JSONL_STORE, 3,
     r"design.command uses \{redis_url\}, but the spec declares no redis server; declare it: \[servers\] redis = \{\}"),
    ('[design]\nname = "d"\ncommand = ["c", "{postgres_dsn}"]\n[servers]\nredis = {}\n' + JSONL_STORE, 3,
     r"design.command uses \{postgres_dsn\}, but the spec declares no postgres server"),
    ('[design]\nname = "d"\ncommand = ["c", "{redis_url}"]\n[store]\nkind = "redis"\nrecords = "r"\n', 3,
     r"design.command uses \{redis_url\}, but the spec declares no redis server; its redis store's address is \{dsn\}"),
    ('[design]\nname = "d"\ncommand = ["c"]\n[servers]\nredis = {}\n[store]\nkind = "redis"\nrecords = "r"\n', 5,
     r"the redis store already lives in a private redis, whose address is \{dsn\}: leave out servers.redis"),
    ('[design]\nname = "d"\ncommand = ["c"]\n[servers]\nmemcached = {}\n' + JSONL_STORE, 5,
     r"unknown key servers.memcached; known: postgres, redis"),
    ('[design]\nname = "d"\ncommand = ["c"]\n[servers]\nredis = true\n' + JSONL_STORE, 5,
     r"servers.redis is a table of its settings, and it has none yet: write redis = \{\}"),
])
def test_a_placeholder_no_run_could_fill_is_one_line_naming_the_key_and_the_fix(tmp_path, text, line, message):
    path = write_spec(tmp_path, text)
    with pytest.raises(KilltestError, match=rf"^{path}:{line}: {message}") as refused:
        load_spec(path)
    assert "\n" not in str(refused.value)


def test_set_args_that_bring_in_an_unfillable_placeholder_are_named_at_their_own_line(tmp_path):
    write_spec(tmp_path, '[design]\nname = "base"\ncommand = ["c", "--q", "x"]\n' + JSONL_STORE, "base.toml")
    child = write_spec(tmp_path, 'extends = "base.toml"\n[design]\nname = "child"\nset_args = { "--q" = "{dsn}" }\n',
                       "child.toml")
    with pytest.raises(KilltestError, match=rf"^{child}:4: design.set_args uses \{{dsn\}}, but a jsonl store"):
        load_spec(child)


@pytest.mark.slow
def test_a_campaign_starts_every_declared_server_gives_each_run_fresh_ones_and_stops_them(tmp_path):
    design = load_spec(write_spec(tmp_path, """
        [design]
        name = "two-servers"
        command = ["crawler", "--queue", "{redis_url}", "--state", "{postgres_dsn}", "--out", "{store}"]

        [servers]
        postgres = {}
        redis = {}
        """ + JSONL_STORE))
    try:
        servers = StoreServers([design]).__enter__()
    except ServerUnavailable as missing:
        if servers_required():
            pytest.fail(f"{missing} ({REQUIRE_SERVERS_VARIABLE} is set, so a missing server fails)")
        pytest.skip(str(missing))
    try:
        running = [(server.pid, server.directory) for server in servers._running.values()]
        first, second = servers.urls_for(design), servers.urls_for(design)
        assert [name for name, _ in first] == ["postgres", "redis"]
        assert first[0][1] != second[0][1]  # a new PostgreSQL database for every run
        assert first[1][1] == second[1][1]  # the one Redis, emptied for every run
        launch = Launch("http://h:1", "/w", 1.0, servers=second)
        assert design.command(launch)[2:5] == [second[1][1], "--state", second[0][1]]
        assert servers.dsn_for(design) == ""
    finally:
        servers.__exit__()
    assert len(running) == 2
    assert not any(psutil.pid_exists(pid) or os.path.exists(directory) for pid, directory in running)


def test_the_command_line_refuses_an_unfillable_placeholder_in_one_line_exit_2(tmp_path):
    spec = write_spec(tmp_path, '[design]\nname = "d"\ncommand = ["c", "--redis", "{dsn}"]\n' + JSONL_STORE)
    done = subprocess.run([sys.executable, "-m", "killtest", "run", "--design", spec, "--schedule", "r1", "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"killtest: error: {spec}:3: design.command uses {{dsn}}")
