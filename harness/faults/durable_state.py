"""What a power cut leaves of a directory: each directory's durable names, each file's durable bytes.

The bookkeeping of killtest.harness.faults.power_loss_fs, kept apart from its FUSE operations so it can be
read (and tested) as plain functions of a directory: take a snapshot, compare the live directory
with the durable state, and rewrite the directory to that state.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

Entry = tuple[int, bool]  # (file id, is a directory)


@dataclass
class DurableState:
    """What a power cut leaves: each directory's durable entries, each file's durable bytes.

    Files are named by an id of ours, not by the backing inode number: the kernel reuses a freed
    inode number, and a new file must never inherit an unlinked file's durable bytes.
    """

    root: int = 0
    entries: dict[int, dict[str, Entry]] = field(default_factory=dict)  # directory id -> name -> entry
    content: dict[int, bytes] = field(default_factory=dict)  # file id -> bytes as of its last fsync
    ids: dict[int, int] = field(default_factory=dict)  # backing inode number -> our id, for live files
    next_id: int = 1

    def new_id(self, inode: int) -> int:
        self.ids[inode] = self.next_id
        self.next_id += 1
        return self.ids[inode]

    def id_of(self, inode: int) -> int:
        return self.ids[inode] if inode in self.ids else self.new_id(inode)


def snapshot(backing: str) -> DurableState:
    """Everything under `backing` as durable: the state at mount time, and after each power cut."""
    state = DurableState()
    state.root = state.new_id(os.lstat(backing).st_ino)

    def walk(directory: str, directory_id: int) -> None:
        state.entries[directory_id] = {}
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            info = os.lstat(path)
            entry_id = state.new_id(info.st_ino)
            is_dir = os.path.isdir(path) and not os.path.islink(path)
            state.entries[directory_id][name] = (entry_id, is_dir)
            if is_dir:
                walk(path, entry_id)
            else:
                with open(path, "rb") as data:
                    state.content[entry_id] = data.read()

    walk(backing, state.root)
    return state


def differences(state: DurableState, backing: str) -> dict[str, list[str]]:
    """What a power cut now would change, by path under the mount: names lost or given back, bytes reverted."""
    lost, restored, reverted = [], [], []

    def walk(directory: str, directory_id: int, prefix: str) -> None:
        durable = state.entries.get(directory_id, {})
        live = set(os.listdir(directory)) if os.path.isdir(directory) else set()
        for name in sorted(live - set(durable)):
            lost.append(prefix + name)
        for name, (entry_id, is_dir) in sorted(durable.items()):
            path = os.path.join(directory, name)
            if name not in live:
                restored.append(prefix + name)
            elif is_dir:
                walk(path, entry_id, prefix + name + "/")
            elif not os.path.isdir(path):
                with open(path, "rb") as data:
                    if data.read() != state.content.get(entry_id, b""):
                        reverted.append(prefix + name)

    walk(backing, state.root, "")
    return {"names_lost": lost, "names_restored": restored, "bytes_reverted": reverted}


def rebuild(state: DurableState, backing: str) -> None:
    """Rewrite `backing` to the durable state: what is on the disk after the power comes back."""
    for name in os.listdir(backing):
        path = os.path.join(backing, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)

    def build(directory: str, directory_id: int) -> None:
        for name, (entry_id, is_dir) in state.entries.get(directory_id, {}).items():
            path = os.path.join(directory, name)
            if is_dir:
                os.mkdir(path)
                build(path, entry_id)
            else:
                with open(path, "wb") as data:
                    data.write(state.content.get(entry_id, b""))

    build(backing, state.root)
