"""The idempotent design waits for a peer that holds SQLite's write lock, however long it was paused.

A worker paused (SIGSTOP, a stopped VM) inside a claim or a commit keeps the write lock while it sleeps. Its
peer waits on busy_timeout; with 5 s, the zoo's 4.5 s pause plus the time the woken worker needs on two loaded
cores ran past it once in about ten serial steps of make test, and the correct design, the zoo-unfenced
scenarios' control, died of `sqlite3.OperationalError: database is locked` (broke finishes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from killtest.scrapers import idempotent

# A peer that takes the write lock, says so, and commits when it is let go (after its pause).
PEER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
"""


def test_a_claim_waits_out_a_peer_paused_for_6_s_while_it_holds_the_write_lock(tmp_path):
    path = str(tmp_path / "store.sqlite")
    db = idempotent.open_store(path)
    idempotent.discover(db, 1, ["/list/0"])
    peer = subprocess.Popen([sys.executable, "-c", PEER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert peer.stdout.readline().strip() == "holding"
        os.kill(peer.pid, signal.SIGSTOP)  # paused with the lock held
        peer.stdin.write("go\n")
        peer.stdin.flush()
        waker = subprocess.Popen(["sh", "-c", f"sleep 6; kill -CONT {peer.pid}"])
        began = time.monotonic()
        assert idempotent.claim(db, 1, lease_s=2.0) == "/list/0"  # not "database is locked"
        assert time.monotonic() - began >= 5.5  # it did wait for the peer
        waker.wait(timeout=10)
        assert peer.wait(timeout=10) == 0
    finally:
        for process in (peer,):
            if process.poll() is None:
                os.kill(process.pid, signal.SIGCONT)
                process.kill()
                process.wait()
