"""Serve the fixture site with a real threaded WSGI server on loopback and an ephemeral port."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from killtest.fixture_site.app import create_app
from killtest.fixture_site.catalog import Catalog
from killtest.fixture_site.doors import ARRIVED, CLOSED_DOOR, DOOR, WORKER_PID, Doors
from killtest.fixture_site.request_log import RequestLog
from killtest.fixture_site.toxics import ToxicDice
from killtest.fixture_site.webhooks import WebhookLog


class _QuietHandler(WSGIRequestHandler):
    # Keep-alive needs HTTP/1.1; werkzeug only turns it on by itself for the threaded server.
    protocol_version = "HTTP/1.1"

    def log_request(self, *args, **kwargs) -> None:  # the RequestLog is the record; no per-request stderr
        pass

    def make_environ(self):
        environ = super().make_environ()
        environ[ARRIVED] = time.monotonic()
        doors = getattr(self.server, "killtest_doors", None)  # the door it is credited to (killtest.fixture_site.doors)
        credit = doors.credit(self.connection, self.client_address) if doors is not None else (None, None)
        environ[DOOR], environ[WORKER_PID] = credit
        environ[CLOSED_DOOR] = doors is not None and doors.is_closed(credit[0])
        return environ

    def finish(self) -> None:
        doors = getattr(self.server, "killtest_doors", None)
        if doors is not None:  # before the socket closes: a later connection may get its fd and port
            doors.forget(self.connection, self.client_address)
        super().finish()


class SiteServer:
    """A context manager that serves `catalog` on 127.0.0.1 in a background thread until it exits."""

    def __init__(self, catalog: Catalog, latency_s: float = 0.0, host: str = "127.0.0.1",
                 slow_paths: dict[str, float] | None = None, pace_rps: float = 0.0) -> None:
        self.catalog = catalog
        self.request_log = RequestLog()
        self.webhooks = WebhookLog()
        self._app = create_app(catalog, self.request_log, latency_s=latency_s, slow_paths=slow_paths,
                               pace_rps=pace_rps, webhooks=self.webhooks)
        self._host = host
        self.toxics: tuple[str, int] | None = None  # (spec, seed) of the faults being injected
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._doors: Doors | None = None

    def set_catalog(self, catalog: Catalog, version: int = 0) -> None:
        """Serve `catalog`, numbered `version`, from the next request on: the site's content drifts. Each
        page answered from it is logged with that number."""
        self.catalog = catalog
        self._app.config["SERVED"] = (catalog, version)

    def set_toxics(self, toxics, seed: int = 0) -> None:
        """Inject `toxics` (a killtest.fixture_site.toxics.Toxics; None or inactive: none) from now on, rolled with
        `seed`: the n-th request for a path meets the same fault in every run with that seed."""
        dice = ToxicDice(toxics, seed) if toxics is not None and toxics.active else None
        self._app.config["TOXICS"] = dice
        self.toxics = (dice.toxics.spec, seed) if dice is not None else None

    def set_request_hook(self, hook, after_sent=None) -> None:
        """Call `hook(path)` as each request arrives, before it is answered (True back: it killed the request's
        start, so the answer reaches no one), and `after_sent(path)` once its answer is written; None removes
        them."""
        self._app.config["ON_REQUEST"] = hook
        self._app.config["ON_RESPONSE_SENT"] = after_sent

    def set_worker_request_hook(self, hook) -> None:
        """Call `hook(path, worker_pid)` as each request arrives, before it is answered and before the hook of
        `set_request_hook`: `worker_pid` is the worker the site credits the request to, from its connection
        (doors.Doors.credit), or None. None removes it."""
        self._app.config["ON_REQUEST_BY"] = hook

    def open_door(self, workers: Callable[[], list[int]] | None = None) -> tuple[int, str]:
        """A door of its own for the next start, at the run's one address: (door, base URL). Every earlier
        start must be dead: what they sent is theirs, what comes in from now on is the new start's.
        `workers`: lists the start's worker pids as they are now, to credit each request to its worker."""
        if self._doors is None:
            raise RuntimeError("the site is not being served")
        return self._doors.rotate(workers)

    def doors_paused(self):
        """A context in which the site reads no connection that came in through a door (doors.Doors.paused)."""
        if self._doors is None:
            raise RuntimeError("the site is not being served")
        return self._doors.paused()

    def connections_unread(self) -> int:
        """Connections taken in through a door while its doors are paused, and not read yet."""
        return 0 if self._doors is None else self._doors.unread()

    def shut_door(self) -> None:
        """The start behind the open door is dead: close its door before the next point is armed, so that a
        request it sent and the site reads late is credited to it and counted by no hook (Doors.shut)."""
        if self._doors is not None:
            self._doors.shut()

    def close_doors(self) -> None:
        """Close every door, once the connections already made through them are taken in."""
        if self._doors is not None:
            self._doors.close()

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the site is not being served")
        return f"http://{self._host}:{self._server.server_port}"

    def start(self) -> SiteServer:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        server = self._server = make_server(self._host, 0, self._app, threaded=True, request_handler=_QuietHandler)
        server.daemon_threads = True  # type: ignore[attr-defined]  # the threaded server's ThreadingMixIn
        # A short poll: shutdown() waits for the serving loop to look, up to 0.5 s at the default.
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fixture-site", daemon=True)
        self._thread.start()
        self._doors = Doors(server, self._host)
        server.killtest_doors = self._doors  # type: ignore[attr-defined]  # read by the request handler
        return self

    def stop(self) -> None:
        if self._doors is not None:
            self._doors.stop()
            self._doors = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._server = None

    def __enter__(self) -> SiteServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
