"""What every private server needs: its binaries, a free loopback port, and a way to refuse politely."""

from __future__ import annotations

import glob
import os
import shutil
import socket

from harness.errors import KilltestError

# CI sets this so that a missing server fails the tests instead of skipping them.
REQUIRE_SERVERS_VARIABLE = "KILLTEST_REQUIRE_SERVERS"


class ServerUnavailable(KilltestError):
    """A server binary is not installed; the message says what to install."""


def find_binary(name: str, debian_globs: tuple[str, ...] = (), install_hint: str = "") -> str:
    """`name` on PATH, or in the usual Debian places (PostgreSQL keeps its server off PATH)."""
    found = shutil.which(name)
    if found:
        return found
    for pattern in debian_globs:
        matches = sorted(glob.glob(pattern), reverse=True)  # the newest version first
        if matches:
            return matches[0]
    raise ServerUnavailable(f"{name} is not installed; {install_hint}")


def free_loopback_port() -> int:
    """A port nothing listens on right now; the server binds it a moment later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def servers_required() -> bool:
    return os.environ.get(REQUIRE_SERVERS_VARIABLE, "") not in ("", "0")
