"""The power-loss file system: a real FUSE mount that forgets what no fsync made durable.

Each test writes through the mount with real system calls (or a real SQLite, SIGKILLed), cuts the
power, and reads what the disk holds afterwards. Skipped where FUSE is missing, unless
KILLTEST_REQUIRE_SERVERS=1 (CI) turns the skip into a failure.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from killtest.harness.errors import KilltestError
from killtest.harness.faults import power_loss
from killtest.harness.faults.power_loss import PowerLossMount, unavailable_reason

REASON = unavailable_reason()
if REASON is not None and os.environ.get("KILLTEST_REQUIRE_SERVERS") == "1":
    raise RuntimeError(f"KILLTEST_REQUIRE_SERVERS=1 but the power-loss file system cannot run: {REASON}")
needs_fuse = pytest.mark.skipif(REASON is not None, reason=f"power-loss file system unavailable: {REASON}")


def write(path: str, data: bytes, *, fsync: bool, flags: int = os.O_CREAT | os.O_TRUNC) -> None:
    fd = os.open(path, os.O_WRONLY | flags, 0o644)
    try:
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read(path: str) -> bytes:
    with open(path, "rb") as data:
        return data.read()


@needs_fuse
def test_a_power_cut_keeps_only_what_fsync_made_durable(tmp_path):
    (tmp_path / "there-before.txt").write_bytes(b"old")
    with PowerLossMount(str(tmp_path)) as mount:
        write(f"{tmp_path}/kept.txt", b"kept", fsync=True)
        fsync_directory(str(tmp_path))
        write(f"{tmp_path}/kept.txt", b" and more", fsync=False, flags=os.O_APPEND)  # bytes never fsynced
        write(f"{tmp_path}/new.txt", b"gone", fsync=True)  # its name never covered by a directory fsync
        os.unlink(f"{tmp_path}/there-before.txt")  # nor this unlink
        assert mount.would_lose() == {"names_lost": ["new.txt"], "names_restored": ["there-before.txt"],
                                      "bytes_reverted": ["kept.txt"]}
        lost = mount.lose()
        assert lost["names_lost"] == ["new.txt"]
        assert sorted(os.listdir(tmp_path)) == ["kept.txt", "there-before.txt"]
        assert read(f"{tmp_path}/kept.txt") == b"kept" and read(f"{tmp_path}/there-before.txt") == b"old"
        assert mount.would_lose() == {"names_lost": [], "names_restored": [], "bytes_reverted": []}
    # After the block: unmounted, and the surviving files are plain files in the directory again.
    assert not os.path.ismount(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["kept.txt", "there-before.txt"]


@needs_fuse
@pytest.mark.parametrize("sync_directory, survives", [(False, b"v1"), (True, b"v2")])
def test_a_rename_counts_only_once_its_directory_is_fsynced(tmp_path, sync_directory, survives):
    """The temp-file-and-rename idiom: without the directory fsync a power cut brings the old file back."""
    (tmp_path / "record.json").write_bytes(b"v1")
    with PowerLossMount(str(tmp_path)) as mount:
        write(f"{tmp_path}/record.json.tmp", b"v2", fsync=True)
        os.rename(f"{tmp_path}/record.json.tmp", f"{tmp_path}/record.json")
        if sync_directory:
            fsync_directory(str(tmp_path))
        mount.lose()
        assert read(f"{tmp_path}/record.json") == survives
        assert not os.path.exists(f"{tmp_path}/record.json.tmp")


WRITER = """
import os, signal, sqlite3, sys
path, journal, sync = sys.argv[1:4]
db = sqlite3.connect(path, isolation_level=None)
db.execute(f"PRAGMA journal_mode={journal}")
db.execute(f"PRAGMA synchronous={sync}")
db.execute("CREATE TABLE t(x)")
for i in range(5):
    db.execute("BEGIN"); db.execute("INSERT INTO t VALUES (?)", (i,)); db.execute("COMMIT")
os.kill(os.getpid(), signal.SIGKILL)  # the power cut takes the process first
"""


@needs_fuse
@pytest.mark.parametrize("journal, sync, rows_after", [
    ("DELETE", "EXTRA", 5),  # the journal's unlink is made durable: every commit survives
    ("DELETE", "FULL", 4),  # SQLite's docs: FULL may roll back the last commit after a power loss
    ("WAL", "FULL", 5),  # the WAL is fsynced at every commit
    ("WAL", "NORMAL", None),  # the WAL is fsynced only at checkpoints: five commits and the table gone
    ("DELETE", "OFF", None),  # nothing fsynced: the database file itself never reached the disk
])
@pytest.mark.slow
def test_sqlite_under_a_power_cut_keeps_what_its_documentation_promises(tmp_path, journal, sync, rows_after):
    store = str(tmp_path / "store.sqlite")
    with PowerLossMount(str(tmp_path)) as mount:
        done = subprocess.run([sys.executable, "-c", WRITER, store, journal, sync])
        assert done.returncode == -signal.SIGKILL
        mount.lose()
        try:
            rows = sqlite3.connect(store).execute("SELECT count(*) FROM t").fetchone()[0]
        except sqlite3.OperationalError as error:
            assert "no such table" in str(error)
            rows = None
    assert rows == rows_after


def test_without_fuse_a_power_loss_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(power_loss.shutil, "which", lambda name: None)
    with pytest.raises(KilltestError, match="needs a FUSE file system: fusermount3 is not installed"):
        PowerLossMount(str(tmp_path))
