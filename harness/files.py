"""Result files are replaced whole: a reader finds the old file or the new one, never half of one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def replacing(path: str) -> Iterator[str]:
    """Yield a temporary path to write; on success it becomes `path`, on any error (Ctrl+C too) it is removed."""
    temporary = f"{path}.partial"
    try:
        yield temporary
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def write_atomically(path: str, text: str) -> None:
    with replacing(path) as temporary, open(temporary, "w", encoding="utf-8") as out:
        out.write(text)
