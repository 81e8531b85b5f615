"""The idempotent design waits for a peer that holds SQLite's write lock, however long it was paused.

A worker paused (SIGSTOP, a stopped VM) inside a claim or a commit keeps the write lock while it sleeps. Its
peer waits on busy_timeout; with 5 s, the zoo's 4.5 s pause plus the time the woken worker needs on two loaded
cores ran past it once in about ten serial steps of make test, and the correct design, the zoo-unfenced
scenarios' control, died of `sqlite3.OperationalError: database is locked` (broke finishes).

The same held for opening the store: sqlite3.connect's own 5 s timeout, not busy_timeout, applied to the
switch to WAL, which on a new file takes the lock too. On a loaded machine a worker's start-up ran into the
zoo's pause, and its peer, waiting in open_store, died of the same error. And two workers started at once
on a new file race to switch it to WAL: SQLite answers the loser at once, whatever the timeout. That race,
not the pause, was what killed the control in CI's serial step (December 2026); open_store retries it.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import pytest

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
        waker.wait(timeout=60)
        assert peer.wait(timeout=60) == 0
    finally:
        if peer.poll() is None:
            os.kill(peer.pid, signal.SIGCONT)
            peer.kill()
            peer.wait()


@pytest.mark.slow
def test_eight_workers_opening_a_new_store_at_once_all_open_it(tmp_path):
    """Workers started together on a new file race to switch it to WAL, and SQLite answers a loser "database
    is locked" at once, not after busy_timeout (it holds a read lock and wants the write lock). Seen in make
    test's serial step when two tests ran side by side: the zoo-unfenced-lease control's start 1 died in
    open_store. Threads, each with its own connection, race as processes do (SQLite's locks are per file);
    300 new stores of 8 openers each, where the bare PRAGMA lost about 6 opens in 1,000 here."""
    failures: list[str] = []

    def opener(path: str, barrier: threading.Barrier) -> None:
        barrier.wait()
        try:
            idempotent.open_store(path).close()
        except sqlite3.OperationalError as error:
            failures.append(f"{os.path.basename(path)}: {error}")
    for trial in range(300):
        barrier = threading.Barrier(8)
        threads = [threading.Thread(target=opener, args=(str(tmp_path / f"store-{trial}.sqlite"), barrier))
                   for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not failures, f"{len(failures)} of 2,400 opens failed: {failures[:3]}"
