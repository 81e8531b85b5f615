"""Progress on stderr while a campaign runs: one line a start, redrawn in place on a terminal."""

from __future__ import annotations

import sys
from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self._stream = stream
        self._in_place = stream.isatty()
        self._width = 0

    def step(self, message: str) -> None:
        """A passing state: overwritten by the next one on a terminal, a line of its own in a log."""
        if self._in_place:
            padding = " " * max(0, self._width - len(message))
            self._stream.write(f"\r{message}{padding}")
            self._width = len(message)
        else:
            self._stream.write(message + "\n")
        self._stream.flush()

    def done(self, message: str) -> None:
        """A line that stays."""
        if self._in_place and self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._width = 0
        self._stream.write(message + "\n")
        self._stream.flush()
