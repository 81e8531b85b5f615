"""A loopback proxy between one start and its store's server that SIGKILLs the start at its n-th write.

    python -S command_gate.py kill N DSN -- COMMAND...      kill before the N-th counted message
    python -S command_gate.py kill C:K DSN -- COMMAND...    kill before the K-th of connection C (1-based)
    python -S command_gate.py after N|C:K DSN -- COMMAND... kill once the server answered it, before relaying that
    python -S command_gate.py record LOG DSN -- COMMAND...  run to the end, one LOG line per counted one

The gate is the start's command: it listens on 127.0.0.1 (a free port), runs COMMAND with every
occurrence of DSN in its arguments and environment replaced by the same DSN through the proxy (so any
program reaches its store through `{dsn}`, in any language), and forwards each connection to the server.
The client's bytes are framed (harness/faults/store_commands.py: PostgreSQL statements, Redis write
commands) and counted, over all the start's connections in the order the gate reads them, and per
connection, numbered in the order of their first counted message (a client library may open its
connections lazily and at once: the order they are accepted in is a race). In `kill` mode the N-th
counted message (or connection C's K-th, `w7:c2`) is never forwarded: the gate SIGKILLs every process
of its group (the start's session: the gate is its leader) and itself, as harness/faults/write_gate.py
does, so the statement never reaches the server and the runner sees the start die of SIGKILL.

In `after` mode (an after twin, `aw7`: harness/faults/points/after_store_write.py) the aimed message is
forwarded, and for a PostgreSQL Execute the messages after it up to its Sync (whose ReadyForQuery says its
implicit transaction committed), but never a counted message after it; then the gate reads that connection's
server stream alone, relays the replies owed before the aimed one, and SIGKILLs the start as soon as the
server's whole reply to it has come (harness/faults/store_replies.py), before relaying it. While it waits,
no other connection's bytes are forwarded: the command is applied and the start has taken no step after it.

It lives in the start's process group, so it dies with the start whatever kills it, and its port
closes with it. It imports only the standard library and its two siblings, and is run by path with
`-S`: it costs a start about 30 ms and a forwarded message a few tens of microseconds.
"""

from __future__ import annotations

import ctypes
import os
import selectors
import signal
import socket
import subprocess
import sys
from typing import Any

if __package__:
    from killtest.harness.faults.store_commands import (
        framer_for,
        probe_says_it_writes,
        proxied_dsn,
        resp,
        store_kind_of_dsn,
    )
    from killtest.harness.faults.store_replies import owed, replies_for
    from killtest.harness.faults.write_gate import kill_start
else:  # run by path with -S: its siblings, without importing the killtest package
    from store_commands import (  # type: ignore[no-redef]
        framer_for,
        probe_says_it_writes,
        proxied_dsn,
        resp,
        store_kind_of_dsn,
    )
    from store_replies import owed, replies_for  # type: ignore[no-redef]
    from write_gate import kill_start  # type: ignore[no-redef]

PR_SET_CHILD_SUBREAPER = 36


class Gate:
    """The proxy's state: the listening socket, each connection's pair and framer, and the count."""

    def __init__(self, upstream: tuple[str, int], kind: str, kill_at: str | None, log_path: str | None,
                 database: bytes = b"0", after: bool = False) -> None:
        self.upstream, self.kind, self.database, self.after = upstream, kind, database, after
        # (None, N): the N-th counted message of all; (C, K): the K-th of connection C (in accept order)
        connection, _, index = (kill_at or "").rpartition(":")
        self.kill_at = (int(connection) if connection else None, int(index) if index else None)
        self.counts: dict[int, int] = {}
        self.log = open(log_path, "w", encoding="utf-8") if log_path else None  # noqa: SIM115
        self.count = 0
        self.connections = 0
        self.selector = selectors.DefaultSelector()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ, ("accept", None))

    @property
    def port(self) -> int:
        return self.listener.getsockname()[1]

    def serve(self, process: subprocess.Popen) -> int:
        """Forward until the command exits; its exit status."""
        pidfd = os.pidfd_open(process.pid)
        self.selector.register(pidfd, selectors.EVENT_READ, ("exit", None))
        while True:
            for key, _ in self.selector.select():
                what, state = key.data
                if what == "exit":
                    if self.log is not None:
                        self.log.close()
                    return process.wait()
                if what == "accept":
                    self._accept()
                elif what == "client":
                    self._from_client(key.fileobj, state)  # type: ignore[arg-type]
                else:
                    self._from_server(key.fileobj, state)  # type: ignore[arg-type]

    def _accept(self) -> None:
        try:
            client, _ = self.listener.accept()
        except BlockingIOError:
            return
        client.setblocking(True)
        try:
            server = socket.create_connection(self.upstream)
        except OSError:  # the store's server is down (a store crash point): the client sees its connection refused
            client.close()
            return
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        state = {"client": client, "server": server, "framer": framer_for(self.kind), "pending": b"",
                 "number": None, "replies": replies_for(self.kind), "reply_pending": b"", "owed": 0, "answered": 0}
        self.selector.register(client, selectors.EVENT_READ, ("client", state))
        self.selector.register(server, selectors.EVENT_READ, ("server", state))

    def _from_client(self, client: socket.socket, state: dict) -> None:
        data = _receive(client)
        if not data:
            self._close(state)
            return
        buffer = state["pending"] + data
        messages, used = state["framer"].feed(buffer)
        state["pending"] = buffer[used:]
        out, owes = b"", 0
        for at, message in enumerate(messages):
            if message.counted and (not message.probe or self._writes(message.probe)):
                self.count += 1
                if state["number"] is None:
                    self.connections += 1
                    state["number"] = self.connections
                number = state["number"]
                self.counts[number] = self.counts.get(number, 0) + 1
                if self.log is not None:
                    self.log.write(f"{self.count}\t{number}\t{message.label}\n")
                if self.kill_at in ((None, self.count), (number, self.counts[number])):
                    if self.after:
                        self._forward(state, out, owes)
                        self._after(state, message, messages[at + 1:])
                    _send(state["server"], out)  # what came before it reaches the server; it never does
                    kill_start()
            out += message.data
            owes += self._owes(state, message.data)
        self._forward(state, out, owes)

    def _owes(self, state: dict, data: bytes) -> int:
        """The replies the server owes for a client message (after mode counts them; else nothing is kept)."""
        if not self.after:
            return 0
        if self.kind == "postgres":
            state["replies"].forwarded(data)  # an SSL request's one-byte answer
        return owed(self.kind, data)

    def _forward(self, state: dict, data: bytes, owes: int) -> None:
        _send(state["server"], data)
        state["owed"] += owes

    def _after(self, state: dict, message: Any, following: list) -> None:
        """Forward the aimed message (a PostgreSQL Execute with what follows it up to its Sync), wait for the
        server's whole reply to it on its connection alone, relaying the replies before it, and kill the start
        before that reply is relayed."""
        self._forward(state, message.data, self._owes(state, message.data))
        if self.kind == "postgres" and message.data[:1] == b"E":  # its transaction commits at the next Sync
            while not self._through_sync(state, following):
                data = _receive(state["client"])  # the Sync has not been sent yet: read on, this client only
                if not data:
                    kill_start()  # the client closed without a Sync: nothing more can be applied
                buffer = state["pending"] + data
                following, used = state["framer"].feed(buffer)
                state["pending"] = buffer[used:]
        aimed = state["owed"]
        while True:
            data = _receive(state["server"])
            if not data:
                kill_start()  # the server closed: its answer never comes, nor anything the start did after it
            buffer = state["reply_pending"] + data
            ends, _ = state["replies"].feed(buffer)
            whole = 0
            for end in ends:
                state["answered"] += 1
                if state["answered"] == aimed:
                    _send(state["client"], buffer[:whole])  # the replies before the aimed one, not its own
                    kill_start()
                whole = end
            _send(state["client"], buffer[:whole])
            state["reply_pending"] = buffer[whole:]

    def _through_sync(self, state: dict, following: list) -> bool:
        """Forward the messages after an aimed Execute up to and including its Sync; True once the Sync went. A
        counted message before it is never forwarded: the start is killed there (the Execute's transaction then
        never commits, which is what a kill before that message leaves too)."""
        for message in following:
            if message.counted:
                kill_start()
            self._forward(state, message.data, self._owes(state, message.data))
            if message.data[:1] in (b"S", b"Q"):
                return True
        return False

    def _writes(self, probe: bytes) -> bool:
        """Whether a Redis script call would write: its read-only twin, run on a connection of the gate's own."""
        with socket.create_connection(self.upstream) as side:
            side.sendall(resp([b"SELECT", self.database]) + probe)
            reply = b""
            while reply.count(b"\r\n") < 2:  # +OK, then the first line of the probe's reply
                chunk = side.recv(65536)
                if not chunk:
                    break
                reply += chunk
        return probe_says_it_writes(reply.split(b"\r\n", 1)[-1])

    def _from_server(self, server: socket.socket, state: dict) -> None:
        data = _receive(server)
        if not data:
            self._close(state)
            return
        if self.after:  # count the replies as they come, so the aimed one's place is known; relay whole values
            buffer = state["reply_pending"] + data
            ends, used = state["replies"].feed(buffer)
            state["answered"] += len(ends)
            data, state["reply_pending"] = buffer[:used], buffer[used:]
        _send(state["client"], data)

    def _close(self, state: dict) -> None:
        for name in ("client", "server"):
            try:
                self.selector.unregister(state[name])
            except (KeyError, ValueError):
                pass
            state[name].close()


def _receive(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def _send(sock: socket.socket, data: bytes) -> None:
    if data:
        try:
            sock.sendall(data)
        except OSError:
            pass  # the other side is gone; its own end closes the pair


def main(argv: list[str]) -> None:
    split = argv.index("--")
    mode, argument, dsn = argv[:split]
    command = argv[split + 1:]
    kind = store_kind_of_dsn(dsn)
    authority = dsn.split("://", 1)[1].split("/", 1)[0].rpartition("@")[2]
    host, _, port = authority.rpartition(":")
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1)  # what the start leaves behind comes back to the gate
    database = dsn.split("://", 1)[1].partition("/")[2].split("?")[0] or "0"
    gate = Gate((host or "127.0.0.1", int(port or (5432 if kind == "postgres" else 6379))), kind,
                argument if mode in ("kill", "after") else None, argument if mode == "record" else None,
                database.encode() if kind == "redis" else b"0", after=mode == "after")
    through = proxied_dsn(dsn, gate.port)
    env = {name: value.replace(dsn, through) for name, value in os.environ.items()}
    process = subprocess.Popen([part.replace(dsn, through) for part in command], env=env)
    status = gate.serve(process)
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)  # the start died of a signal: so does its gate, as the runner expects
    sys.exit(status)


if __name__ == "__main__":
    main(sys.argv[1:])
