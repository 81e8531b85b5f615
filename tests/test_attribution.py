"""A request is credited to the start that sent it, by the door it came in by, not by when it was read.

By arrival time, a request that a killed start sent and the site read only after the next start had
begun was credited to the next one: a false `fetched_twice_by_one_start` in a design with no leases
(issue 16). Each start now comes in through a door of its own at the run's one address
(killtest.fixture_site.doors).
"""

import os
import subprocess
import sys
import time

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness.design.model import Design, Launch, StoreSpec
from killtest.harness.history import History
from killtest.harness.running.collect import add_requests
from killtest.harness.running.processes import spawn

# Sends one request, says so, and waits to be killed.
SENDER = ("import socket, sys, time, urllib.parse as u; p = u.urlsplit(sys.argv[1]);"
          " s = socket.create_connection((p.hostname, p.port));"
          " s.sendall(b'GET /list/0 HTTP/1.1\\r\\nHost: shop\\r\\n\\r\\n'); print('sent', flush=True); time.sleep(60)")
DESIGN = Design(name="sender", store=StoreSpec(kind="jsonl", path="{work_dir}/r.jsonl"),
                command_template=(sys.executable, "-c", SENDER, "{base_url}"))


def _wait_for(condition, timeout_s=60.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def _said(path: str) -> bool:
    return os.path.exists(path) and "sent" in open(path, encoding="utf-8").read()


def test_a_request_a_killed_start_sent_before_the_site_read_it_is_credited_to_that_start(tmp_path):
    with SiteServer(build_catalog(listing_pages=1, products_per_page=2, seed=1)) as site:
        launch = Launch(base_url=site.base_url, work_dir=str(tmp_path), lease_s=1.0, open_door=site.open_door)
        began = time.monotonic()
        with site.doors_paused():  # the site is slow to read: the request waits, unread
            killed = spawn(DESIGN, launch, 0)
            _wait_for(lambda: _said(killed.workers[0].stdout_path))
            killed.kill()
            following = spawn(DESIGN, launch, 1)  # running when the site reads the killed start's request
            _wait_for(lambda: _said(following.workers[0].stdout_path))
        _wait_for(lambda: site.request_log.total == 2)
        following.kill()
        site.close_doors()
        history = History()
        add_requests(history, site, [killed, following], began)
    # Both starts were given the same address: a design may key its work by URL.
    assert killed.door_url == following.door_url and killed.door != following.door
    by_start = {event["start"]: event for event in history.of_type("request")}
    assert set(by_start) == {0, 1}
    # By arrival time it would have been the following start's: the site read it after that one began.
    assert by_start[0]["t"] > following.started - began


def test_a_start_that_keeps_the_address_it_was_given_is_credited_with_its_own_requests(tmp_path):
    """A later start that reuses a stored URL comes in at the same address, through its own door."""
    with SiteServer(build_catalog(listing_pages=1, products_per_page=2, seed=1)) as site:
        launch = Launch(base_url=site.base_url, work_dir=str(tmp_path), lease_s=1.0, open_door=site.open_door)
        began = time.monotonic()
        first = spawn(DESIGN, launch, 0)
        _wait_for(lambda: _said(first.workers[0].stdout_path))
        first.kill()
        _wait_for(lambda: site.request_log.total == 1)
        assert first.door_url is not None
        keeps_the_old_address = Design(name="keeper", store=DESIGN.store,
                                       command_template=(sys.executable, "-c", SENDER, first.door_url))
        later = spawn(keeps_the_old_address, launch, 1)
        _wait_for(lambda: _said(later.workers[0].stdout_path))
        _wait_for(lambda: site.request_log.total == 2)
        later.kill()
        site.close_doors()
        history = History()
        add_requests(history, site, [first, later], began)
    assert [e["start"] for e in history.of_type("request")] == [0, 1]


# Sends one request on a connection of its own, says so with its pid, and waits to be killed.
PID_SENDER = SENDER.replace("print('sent', flush=True)", "import os; print('sent', os.getpid(), flush=True)")
WORKERS_DESIGN = Design(name="sender", store=DESIGN.store,
                        command_template=(sys.executable, "-c", PID_SENDER, "{base_url}"))


def _sent_by(path: str) -> int | None:
    if not os.path.exists(path):
        return None
    words = open(path, encoding="utf-8").read().split()
    return int(words[1]) if len(words) >= 2 and words[0] == "sent" else None


def test_each_request_is_credited_to_the_worker_that_sent_it_even_one_killed_before_the_site_read_it(tmp_path):
    with SiteServer(build_catalog(listing_pages=1, products_per_page=2, seed=1)) as site:
        launch = Launch(base_url=site.base_url, work_dir=str(tmp_path), lease_s=1.0, open_door=site.open_door)
        began = time.monotonic()
        with site.doors_paused():  # the site reads nothing yet
            start = spawn(WORKERS_DESIGN, launch, 0, workers=2)
            first, second = (w.stdout_path for w in start.workers)
            _wait_for(lambda: _sent_by(first) is not None and _sent_by(second) is not None)
            # Taken in (accepted and credited) but not read: the site names a connection's worker when it takes
            # it in; a worker killed before that has no process left to name (socket_owner: timing decides).
            _wait_for(lambda: site.connections_unread() == 2)
            killed_pid = _sent_by(first)
            start.restart_worker(1, None, WORKERS_DESIGN, launch)  # killed with its request unread
            restarted = start.workers[0].stdout_path
            _wait_for(lambda: _sent_by(restarted) is not None)
        _wait_for(lambda: site.request_log.total == 3)
        start.kill()
        site.close_doors()
        history = History()
        add_requests(history, site, [start], began)
    credited = sorted((e["worker"], e["pid"]) for e in history.of_type("request"))
    assert credited == sorted([(1, killed_pid), (2, _sent_by(second)), (1, _sent_by(restarted))])
    assert killed_pid != _sent_by(restarted)


def test_a_start_of_one_worker_names_no_worker(tmp_path):
    """One worker: the start says it all, and the site is not asked (no cost per connection)."""
    with SiteServer(build_catalog(listing_pages=1, products_per_page=2, seed=1)) as site:
        launch = Launch(base_url=site.base_url, work_dir=str(tmp_path), lease_s=1.0, open_door=site.open_door)
        began = time.monotonic()
        start = spawn(WORKERS_DESIGN, launch, 0)
        _wait_for(lambda: _sent_by(start.workers[0].stdout_path) is not None)
        _wait_for(lambda: site.request_log.total == 1)
        start.kill()
        site.close_doors()
        history = History()
        add_requests(history, site, [start], began)
    assert [e.get("worker") for e in history.of_type("request")] == [None]
    assert [r.worker_pid for r in site.request_log.snapshot()] == [None]


def test_the_kernel_names_the_inode_of_a_connections_client_end_and_none_once_it_is_closed():
    import socket

    from killtest.fixture_site.socket_owner import client_inode, owner

    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        connection, address = server.accept()
        with connection:
            assert client_inode(address, server.getsockname()) == os.fstat(client.fileno()).st_ino
            assert owner(address, server.getsockname(), [os.getpid()]) == os.getpid()
            assert owner(address, server.getsockname(), [os.getppid()]) == os.getppid()  # a process it started
            other = subprocess.Popen(["sleep", "30"])
            try:
                assert owner(address, server.getsockname(), [other.pid]) is None  # another's
            finally:
                other.kill()
                other.wait()
            client.close()
            assert owner(address, server.getsockname(), [os.getpid()]) is None
    assert client_inode(("127.0.0.1", 1), ("127.0.0.1", 2)) is None
    assert client_inode(("::1", 1), ("::1", 2)) is None  # IPv6: not asked


def test_a_request_a_dead_start_sent_and_the_site_read_after_its_door_closed_reaches_no_request_hook(tmp_path):
    """A kill point counts the running start's requests: a killed start's request read late (a loaded machine)
    fired the next start's `f` point at once (a CI run saw its kill 0.15 s after the spawn, not 0.6 s)."""
    seen: list[str] = []
    with SiteServer(build_catalog(listing_pages=1, products_per_page=2, seed=1)) as site:
        site.set_request_hook(seen.append)
        launch = Launch(base_url=site.base_url, work_dir=str(tmp_path), lease_s=1.0, open_door=site.open_door)
        with site.doors_paused():  # the site is slow to read: the dead start's request waits, unread
            killed = spawn(DESIGN, launch, 0)
            _wait_for(lambda: _said(killed.workers[0].stdout_path))
            killed.kill()
            _wait_for(lambda: site.connections_unread() == 1)
            site.shut_door()  # as the runner does before it arms the next point
        _wait_for(lambda: site.request_log.total == 1)
        assert seen == []  # logged, credited to its door, and counted by no hook
        following = spawn(DESIGN, launch, 1)
        _wait_for(lambda: site.request_log.total == 2)
        following.kill()
        site.close_doors()
    assert len(seen) == 1  # the running start's own request is counted
    doors = [entry.door for entry in site.request_log.snapshot()]
    assert doors[0] == killed.door and doors[1] == following.door != killed.door
    # the log says which came in late, by a shut door (the history's `late`), and which did not
    assert [entry.late for entry in site.request_log.snapshot()] == [True, False]
