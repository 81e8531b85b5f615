"""A private redis-server on a free loopback port, in a temporary directory, persisting nothing."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time

from harness.errors import KilltestError
from harness.servers.common import find_binary, free_loopback_port

INSTALL_HINT = "install Redis (Debian: apt-get install redis-server) or skip the Redis designs"
START_TIMEOUT_S = 10.0


class PrivateRedis:
    """`with PrivateRedis() as redis: url = redis.url` — a fresh, empty server; `fresh_database` flushes it."""

    def __init__(self) -> None:
        self.binary = find_binary("redis-server", ("/usr/bin/redis-server",), INSTALL_HINT)
        self.port = 0
        self._dir: str | None = None
        self._process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> "PrivateRedis":
        self._dir = tempfile.mkdtemp(prefix="killtest-redis-")
        try:
            self.port = free_loopback_port()
            # No RDB, no AOF: a kill test restarts clients, and a fresh run starts from an empty server.
            self._process = subprocess.Popen(
                [self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", self._dir, "--save", "",
                 "--appendonly", "no", "--protected-mode", "yes", "--logfile", os.path.join(self._dir, "redis.log")],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                start_new_session=True)
            self._wait_until_ready()
            return self
        except BaseException:
            self.stop()
            raise

    def fresh_database(self) -> str:
        """The server emptied for a new run; its URL."""
        import redis

        with redis.Redis.from_url(self.url) as client:
            client.flushall()
        return self.url

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)  # it holds nothing worth a clean shutdown
            self._process.wait()
        self._process = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> "PrivateRedis":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _wait_until_ready(self) -> None:
        import redis

        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._process.poll() is not None:
                raise KilltestError(f"the private redis-server exited with status {self._process.returncode}")
            try:
                with redis.Redis.from_url(self.url, socket_connect_timeout=1) as client:
                    client.ping()
                return
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline:
                    raise KilltestError(f"the private redis-server did not answer in {START_TIMEOUT_S:g}s") from None
                time.sleep(0.02)
