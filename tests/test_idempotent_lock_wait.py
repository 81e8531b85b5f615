"""The idempotent design waits for a peer that holds SQLite's write lock, however long it was paused.

A worker paused (SIGSTOP, a stopped VM) inside a claim or a commit keeps the write lock while it sleeps. Its
peer waits on busy_timeout; with 5 s, the zoo's 4.5 s pause plus the time the woken worker needs on two loaded
cores ran past it once in about ten serial steps of make test, and the correct design, the zoo-unfenced
scenarios' control, died of `sqlite3.OperationalError: database is locked` (broke finishes).

The same held for opening the store: sqlite3.connect's own 5 s timeout, not busy_timeout, applied to the
switch to WAL, which on a new file takes the lock too. On a loaded machine a worker's start-up ran into the
zoo's pause, and its peer, waiting in open_store, died of the same error (CI, December 2026).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

from killtest.scrapers import idempotent

# A peer that takes the write lock, says so, and commits when it is let go (after its pause).
PEER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute(sys.argv[2])
print("holding", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
"""


def test_a_claim_waits_out_a_peer_paused_for_6_s_while_it_holds_the_write_lock(tmp_path):
    path = str(tmp_path / "store.sqlite")
    db = idempotent.open_store(path)
    idempotent.discover(db, 1, ["/list/0"])
    with paused_for_6_s_holding_the_lock(path, "BEGIN IMMEDIATE"):
        began = time.monotonic()
        assert idempotent.claim(db, 1, lease_s=2.0) == "/list/0"  # not "database is locked"
        assert time.monotonic() - began >= 5.5  # it did wait for the peer


def test_a_start_opens_a_new_store_while_a_peer_paused_for_6_s_holds_its_lock(tmp_path):
    path = str(tmp_path / "store.sqlite")  # a new file, not yet in WAL mode: its peer's lock blocks readers too
    with paused_for_6_s_holding_the_lock(path, "BEGIN EXCLUSIVE"):
        began = time.monotonic()
        db = idempotent.open_store(path)  # not "database is locked" after sqlite3.connect's 5 s
        assert time.monotonic() - began >= 5.5
    idempotent.discover(db, 1, ["/list/0"])
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert idempotent.claim(db, 1, lease_s=2.0) == "/list/0"


@contextmanager
def paused_for_6_s_holding_the_lock(path: str, begin: str):
    """A peer that takes the lock with `begin`, is stopped (SIGSTOP) and woken 6 s later, then commits."""
    peer = subprocess.Popen([sys.executable, "-c", PEER, path, begin], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert peer.stdout.readline().strip() == "holding"
        os.kill(peer.pid, signal.SIGSTOP)  # paused with the lock held
        peer.stdin.write("go\n")
        peer.stdin.flush()
        waker = subprocess.Popen(["sh", "-c", f"sleep 6; kill -CONT {peer.pid}"])
        yield
        waker.wait(timeout=10)
        assert peer.wait(timeout=10) == 0
    finally:
        if peer.poll() is None:
            os.kill(peer.pid, signal.SIGCONT)
            peer.kill()
            peer.wait()
