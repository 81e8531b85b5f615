"""A private PostgreSQL server: initdb in a temporary directory, postgres on a free loopback port.

Each run gets a fresh, empty database (`fresh_database`); the server and its directory are gone
when the context exits, whatever stopped the harness. PostgreSQL refuses to run as root, so as root
the server runs as the `postgres` user that Debian's package creates.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess

from killtest.harness.errors import KilltestError
from killtest.harness.servers.common import PrivateServer, ServerUnavailable, find_binary

DEBIAN_BIN = "/usr/lib/postgresql/*/bin/"
INSTALL_HINT = "install PostgreSQL (Debian: apt-get install postgresql) or skip the PostgreSQL designs"
SUPERUSER = "killtest"


class PrivatePostgres(PrivateServer):
    """`with PrivatePostgres() as pg: dsn = pg.fresh_database()`."""

    name = "postgres"
    python_packages = (("psycopg", "postgres"),)
    stop_signal = signal.SIGINT  # a fast shutdown, so the server removes its own lock files

    def __init__(self) -> None:
        super().__init__()
        self.initdb = find_binary("initdb", (DEBIAN_BIN + "initdb",), INSTALL_HINT)
        self.postgres = find_binary("postgres", (DEBIAN_BIN + "postgres",), INSTALL_HINT)
        self._databases = 0
        self._account = _unprivileged_account()

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _prepare(self) -> None:
        data, sockets = os.path.join(self.directory, "data"), os.path.join(self.directory, "sockets")
        os.mkdir(sockets)
        if self._account:
            os.chown(self.directory, *self._account)
            os.chown(sockets, *self._account)
        self._run([self.initdb, "-D", data, "-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--no-sync"])

    def _launch(self) -> None:
        data, sockets = os.path.join(self.directory, "data"), os.path.join(self.directory, "sockets")
        with open(os.path.join(self.directory, "postgres.log"), "ab") as log:
            # fsync off: the harness kills processes, never the machine; the OS keeps what a killed
            # server wrote, and crash recovery replays it on the restart. Under the disk model (a
            # command prefix) it is on: what a commit costs is the point of the model.
            fsync = "on" if self.command_prefix else "off"
            self._process = subprocess.Popen(
                [*self.command_prefix, self.postgres, "-D", data, "-p", str(self.port),
                 "-c", "listen_addresses=127.0.0.1",
                 "-c", f"unix_socket_directories={sockets}", "-c", f"fsync={fsync}", "-c", "full_page_writes=off",
                 "-c", "max_connections=200"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=self._drop_privileges)

    def fresh_database(self) -> str:
        """A new empty database on the server; its DSN."""
        import psycopg

        self._databases += 1
        name = f"run_{self._databases}"
        with psycopg.connect(self.dsn(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return self.dsn(name)

    def _drop_privileges(self) -> None:
        if self._account:
            os.setgid(self._account[1])
            os.setuid(self._account[0])

    def _run(self, argv: list[str]) -> None:
        done = subprocess.run(argv, capture_output=True, text=True, preexec_fn=self._drop_privileges,
                              stdin=subprocess.DEVNULL, timeout=120)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise KilltestError(f"{os.path.basename(argv[0])} failed with status {done.returncode}: {last}")

    def _answers(self) -> bool:
        import psycopg

        try:
            psycopg.connect(self.dsn(), connect_timeout=1).close()
            return True
        except psycopg.OperationalError:
            return False


def _unprivileged_account() -> tuple[int, int] | None:
    """(uid, gid) to run the server as when the harness is root; None when it is not."""
    if os.geteuid() != 0:
        return None
    try:
        account = pwd.getpwnam("postgres")
    except KeyError:
        raise ServerUnavailable("PostgreSQL will not run as root and there is no 'postgres' user to run it as;"
                                " create one (useradd --system postgres) or run killtest as another user") from None
    return account.pw_uid, account.pw_gid
