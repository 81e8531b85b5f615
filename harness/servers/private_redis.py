"""A private redis-server on a free loopback port, in a temporary directory, persisting nothing."""

from __future__ import annotations

import os
import subprocess

from killtest.harness.servers.common import PrivateServer, find_binary

INSTALL_HINT = "install Redis (Debian: apt-get install redis-server) or skip the Redis designs"


class PrivateRedis(PrivateServer):
    """`with PrivateRedis() as redis: url = redis.url` — a fresh, empty server; `fresh_database` flushes it."""

    name = "redis"
    python_packages = (("redis", "redis"),)
    start_timeout_s = 10.0

    def __init__(self) -> None:
        super().__init__()
        self.binary = find_binary("redis-server", ("/usr/bin/redis-server",), INSTALL_HINT)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _launch(self) -> None:
        # An append-only file synced on every write: a queue store must keep what it acknowledged when the
        # server itself is killed and restarted mid-crawl (kill point s<seconds>). No RDB snapshots.
        self._process = subprocess.Popen(
            [*self.command_prefix, self.binary, "--bind", "127.0.0.1", "--port", str(self.port),
             "--dir", self.directory, "--save", "", "--appendonly", "yes", "--appendfsync", "always",
             "--protected-mode", "yes",
             "--logfile", os.path.join(self.directory, "redis.log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)

    def fresh_database(self) -> str:
        """The server emptied for a new run; its URL."""
        import redis

        with redis.Redis.from_url(self.url) as client:
            client.flushall()
        return self.url

    def _answers(self) -> bool:
        import redis

        try:
            with redis.Redis.from_url(self.url, socket_connect_timeout=1) as client:
                return bool(client.ping())
        except redis.exceptions.ConnectionError:
            return False
