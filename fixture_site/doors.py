"""Doors: the site's address for a run's starts, whose listening socket is replaced at every start, so a
request is credited to the start that connected, not to the one running when the request was read.

Every start of a run is given the same base URL (a design may key its work by URL: Scrapy's
fingerprints, a queue's job IDs), on a port of the run's own. Behind it, each start gets a fresh
listening socket (a *door*) bound to that port: before the next start is spawned, the harness
**rotates** the door: every connection the dead start made is taken in through the old socket and
keeps its credit, then the old socket is closed and a new one bound to the same port. A request the
killed start sent just before the kill, and that the site reads only after the next start began,
is still the killed start's. Workers of one start share its door.

The doors share the site's WSGI server (its app, request log and handler threads): one thread
accepts on the open door and hands each connection to the server; the handler asks `credit` which
door a connection's requests are credited to (None: the site's own port).

When the harness says how to list a door's worker pids (`rotate(workers)`, called as connections come
in, so a restarted worker is found), each connection is also credited, when it is taken in, to the
worker whose process holds its client end (killtest.fixture_site.socket_owner): exact, unless the
worker died between connecting and the accept.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import socket
import threading
from collections.abc import Callable, Iterator

from werkzeug.serving import BaseWSGIServer

from killtest.fixture_site.socket_owner import owner

# The last door's port in this process: `killtest run` records a store-write point's aim on a site of its
# own, then runs on another site, whose first door asks for the same port.
_last_port: int | None = None
DOOR = "killtest.door"  # the WSGI environ key holding the door a request is credited to, or None
# The environ key that is True when the request's door was closed before the site read it: a dead start's, sent
# before its kill; no request hook counts it toward the start that runs now (its `r5`, its first request).
CLOSED_DOOR = "killtest.closed_door"
WORKER_PID = "killtest.worker_pid"  # the environ key holding the pid of the worker that made it, or None
# When the site read the request (time.monotonic()), taken before its door is looked at: a request read after the
# next start began always finds its dead start's door closed (the runner shuts it before that start's spawn).
ARRIVED = "killtest.arrived"


class Doors:
    """`door, url = doors.rotate()` before each start; `doors.close()` at the end of the run."""

    def __init__(self, server: BaseWSGIServer, host: str) -> None:
        self._server, self._host = server, host
        self._ids = itertools.count(1)
        self._door: tuple[int, socket.socket] | None = None  # (id, listening socket) of the open door
        self._port: int | None = None  # the run's port, kept across rotations
        # (fd, client address) of each connection taken in -> (the id of the door it came in by, its worker's
        # pid, whether the site has asked for it a second time); forgotten when the connection ends
        self._credit: dict[tuple[int, object], tuple[int, int | None, bool]] = {}
        self._workers: Callable[[], list[int]] | None = None  # the open door's worker pids, when asked for
        self._held: list[tuple[socket.socket, object]] = []  # taken in while paused (tests)
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        self._stopping = False
        self._reading = threading.Event()  # cleared: connections taken in are held, not yet read
        self._reading.set()
        self._thread = threading.Thread(target=self._accept_forever, name="fixture-site-doors", daemon=True)
        self._thread.start()

    def rotate(self, workers: Callable[[], list[int]] | None = None) -> tuple[int, str]:
        """Take in all the old door's connections, close it, and open a new door on the same port.

        `workers`: lists the pids of the start's workers as they are now, for worker credit."""
        with self._lock:
            self._close_door()
            self._workers = workers
            listening = self._listen()
            listening.setblocking(False)
            self._port = listening.getsockname()[1]
            door = next(self._ids)
            self._door = (door, listening)
        os.write(self._wake_w, b"r")
        return door, f"http://{self._host}:{self._port}"

    def _listen(self) -> socket.socket:
        """A listening socket on the run's port; the next run keeps the last run's port when it is still free.

        Why keep it: a store-write point is aimed by a recording, a run of its own (harness/running/
        write_plans.py), and a design may name its files after its base URL (Crawlee hashes a request's
        URL, port included, into its queue file's name): on another port the recorded files never appear
        and the point's count lands on another write."""
        global _last_port
        for port in dict.fromkeys(p for p in (self._port, _last_port) if p):
            with contextlib.suppress(OSError):  # taken meanwhile: a new port (a write gate off its aim says so)
                listening = socket.create_server((self._host, port), backlog=128)  # SO_REUSEADDR
                break
        else:
            listening = socket.create_server((self._host, 0), backlog=128)
        _last_port = listening.getsockname()[1]
        return listening

    def shut(self) -> None:
        """The start behind the open door is dead: take in its connections and close the door, keeping their
        credit. What it sent and the site reads later is its own, not the next point's."""
        with self._lock:
            self._close_door()
        os.write(self._wake_w, b"s")

    def is_closed(self, door: int | None) -> bool:
        """Whether `door` (an id `credit` gave) is no longer the open one; None (the site's own port) never is.
        No lock: one read of the open door's tuple, so a request never waits on a door being taken in."""
        current = self._door
        return door is not None and (current is None or current[0] != door)

    def close(self) -> None:
        """The run is over: take in the last door's connections and close it; the next run asks for its port again."""
        with self._lock:
            self._close_door()
            self._credit = {}
            self._workers = None
        os.write(self._wake_w, b"c")

    def credit(self, connection: socket.socket, client_address: object) -> tuple[int | None, int | None]:
        """The door a connection came in by (None: the site's own port), and the pid of the worker that
        made it (None: not asked, or not found)."""
        key = (connection.fileno(), client_address)
        with self._lock:
            door, pid, asked_again = self._credit.get(key, (None, None, True))
            workers = self._workers
        if door is not None and pid is None and not asked_again and workers:
            # Not found when taken in: a worker can connect before the harness has its pid (a pre-forked
            # start reports it after the fork). Its first request is being read: ask again, once.
            with contextlib.suppress(OSError):
                pid = owner(client_address, connection.getsockname(), workers())  # type: ignore[arg-type]
            with self._lock:
                if key in self._credit:
                    self._credit[key] = (door, pid, True)
        return door, pid

    def forget(self, connection: socket.socket, client_address: object) -> None:
        """The connection is over: its file descriptor and port may come back for another one."""
        with self._lock:
            self._credit.pop((connection.fileno(), client_address), None)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Read no connection taken in until the block ends: a site slow to read what was sent (for tests).
        Connections are still taken in (accepted, and credited to their door and worker) meanwhile."""
        self._reading.clear()
        try:
            yield
        finally:
            with self._lock:
                held, self._held = self._held, []
                self._reading.set()
            for connection, address in held:
                self._server.process_request(connection, address)

    def unread(self) -> int:
        """How many connections were taken in (accepted, credited) while paused and are not read yet."""
        with self._lock:
            return len(self._held)

    def stop(self) -> None:
        self._stopping = True
        self._reading.set()
        self.close()
        self._thread.join(timeout=5)
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _close_door(self) -> None:
        if self._door is not None:
            door, listening = self._door
            self._take_in(door, listening)
            # Shut down first: the accepting thread's select holds the socket open past a close alone,
            # and the port must be free for the next door at once.
            with contextlib.suppress(OSError):
                listening.shutdown(socket.SHUT_RDWR)
            listening.close()
            self._door = None

    def _take_in(self, door: int, listening: socket.socket) -> None:
        """Accept every connection waiting at the door (the lock held) and hand each to the server."""
        while True:
            try:
                connection, address = listening.accept()
            except (BlockingIOError, OSError):
                return
            connection.setblocking(True)
            pid = owner(address, listening.getsockname(), self._workers()) if self._workers else None
            self._credit[(connection.fileno(), address)] = (door, pid, pid is not None)
            if self._reading.is_set():
                self._server.process_request(connection, address)  # a handler thread of the site's server
            else:
                self._held.append((connection, address))

    def _accept_forever(self) -> None:
        while not self._stopping:
            with self._lock:
                current = self._door
            watched = [self._wake_r] + ([current[1].fileno()] if current is not None else [])
            try:
                ready, _, _ = select.select(watched, [], [], 1.0)
            except (OSError, ValueError):
                continue  # the door closed under us: look again
            if self._wake_r in ready:
                os.read(self._wake_r, 64)
            with self._lock:
                if current is not None and self._door is current and current[1].fileno() in ready:
                    self._take_in(*current)
