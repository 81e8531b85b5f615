"""Result files are replaced whole: a reader finds the old file or the new one, never half of one."""

from __future__ import annotations

import os


def write_atomically(path: str, text: str) -> None:
    temporary = f"{path}.partial"
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:  # Ctrl+C mid-write included: the old file stays, no half-written one appears
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
