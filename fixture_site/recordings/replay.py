"""Serve a recording as the fixture site: a forward proxy in front, the shop's own server behind it.

The scraper is told to use a proxy (HTTP_PROXY and friends) and to trust the proxy's CA
(SSL_CERT_FILE, REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS, CURL_CA_BUNDLE), so its own URLs work
unchanged, over HTTP and HTTPS. The proxy (killtest.fixture_site.recordings.replay_proxy, mitmproxy in a process
of its own) rewrites every request to the site's server on 127.0.0.1, the URL quoted into the
path; that server is SiteServer itself, the shop's app with one more route: so the request log,
the doors (one per start), the request kill points, toxics, pacing and slow pages work as on the
shop. The route answers with the recorded status, headers and bytes, and with a 404 for a URL the
recording does not hold; nothing is ever forwarded. A request is logged as `/` + its URL.

Doors: mitmproxy opens its upstream connections per client connection, so a start's requests come
in by the door that was open when the proxy first forwarded one of its connections. A killed start's
connection the proxy had not yet forwarded when the next door opened is credited to the next start
(the shop has no such window: there the scraper's own connection is taken in).

The proxy runs on an interpreter of its own: the harness builds mitmproxy's env once, at the pins
below (killtest.harness.tool_envs, kind `tools`), and passes its python here, so mitmproxy's exact caps
never touch the user's environment. That interpreter imports killtest's own redaction code from the
files this process runs (`_killtest_path`): the replay must mask a request as the recorder did, so both
run the code of one killtest, a wheel's or an editable checkout's, never a copy installed beside it.

Left out: drift (a recording has one version of the site) and webhooks.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable

from flask import Response, request

from killtest.fixture_site.recordings.recorded_site import RecordedSite
from killtest.fixture_site.server import SiteServer

PROXY_START_S = 30.0  # mitmproxy imports a lot and writes its CA on first use
UNRECORDED = "X-Killtest-Unrecorded"  # the header on the 404 for a URL not in the recording
# The proxy's env: the newest mitmproxy for this interpreter (12.x needs Python 3.12; 11.0.2 is the last
# release for 3.10 and 3.11) and warcio for the recorder's WARC. Exact pins, so every machine records and
# replays with the same proxy; its caps stay in its env. Raising them is a change of this line.
PROXY_PACKAGES = (("mitmproxy==12.3.1" if sys.version_info >= (3, 12) else "mitmproxy==11.0.2"), "warcio==1.8.1")
# The folder that holds this process's fixture_site package: the repository (editable) or site-packages/killtest.
_KILLTEST_FILES = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _killtest_path(confdir: str) -> str:
    """A folder for the proxy's PYTHONPATH holding only `killtest.fixture_site`, pointed at this process's own
    files. Not killtest's whole site-packages (the user's packages would shadow mitmproxy's), and not a wheel
    installed into the env (an editable checkout's changes would not reach it): an empty `killtest` package
    and a `fixture_site` whose `__path__` names the real folder, so neither killtest's API nor the shop's
    Flask app (fixture_site/__init__.py) is imported: the proxy needs only recordings/."""
    package = os.path.join(confdir, "killtest-path", "killtest", "fixture_site")
    os.makedirs(package, exist_ok=True)
    for folder, text in ((os.path.dirname(package), ""),
                         (package, f"__path__ = [{os.path.join(_KILLTEST_FILES, 'fixture_site')!r}]\n")):
        with open(os.path.join(folder, "__init__.py"), "w", encoding="utf-8") as out:
            out.write(f'"""killtest\'s own files, for the recording proxy\'s interpreter."""\n{text}')
    return os.path.dirname(os.path.dirname(package))


class ProxyProcess:
    """mitmproxy in its own process and session, on 127.0.0.1 and a free port, run by `python` (its env's
    interpreter, PROXY_PACKAGES); `stop()` ends it."""

    def __init__(self, args: list[str], confdir: str, python: str,
                 register: Callable[[int], None] = lambda pid: None) -> None:
        confdir = os.path.abspath(confdir)
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and k != "PYTHONHOME"}
        env["PYTHONPATH"] = _killtest_path(confdir)
        # Started in confdir: `python -m` puts the working directory first on sys.path, and a checkout's
        # own killtest/ folder there would hide the one above.
        self.process = subprocess.Popen(
            [python, "-m", "killtest.fixture_site.recordings.replay_proxy", *args, "--confdir", confdir],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            env=env, cwd=confdir)
        register(self.process.pid)
        try:
            said = self._first_line()
        except BaseException:  # Ctrl+C while it starts: no half-started proxy is left running
            self.stop()
            raise
        if "port" not in said:
            self.stop()
            raise RuntimeError(f"the recording proxy did not start: {said.get('error') or said.get('stderr')}")
        self.port: int = said["port"]
        self.ca: str = said["ca"]
        self.spki: str = said.get("spki", "")

    def _first_line(self) -> dict:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], PROXY_START_S)
        line = self.process.stdout.readline() if ready else b""
        try:
            return json.loads(line)
        except ValueError:
            self.process.kill()
            _, err = self.process.communicate(timeout=5)
            return {"stderr": (err.decode(errors="replace").strip().splitlines() or ["(nothing)"])[-1]}

    def scraper_env(self) -> dict[str, str]:
        """What a scraper is started with to go through this proxy and trust its CA."""
        proxy = f"http://127.0.0.1:{self.port}"
        env = {name: proxy for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
                                        "ALL_PROXY", "all_proxy")}
        env.update({name: self.ca for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                                               "CURL_CA_BUNDLE")})
        env.update(NO_PROXY="", no_proxy="")
        env[BROWSER_ARGS] = " ".join(browser_flags(proxy, self.spki))
        return env

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGINT)  # lets the recorder close its WARC
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


BROWSER_ARGS = "KILLTEST_BROWSER_ARGS"


def browser_flags(proxy: str, spki: str) -> list[str]:
    """Chromium's flags to go through the proxy and trust its CA (a browser reads no HTTPS_PROXY or
    SSL_CERT_FILE: it takes its proxy and trust from flags or its profile), and to keep its own background
    traffic (updates, Safe Browsing, sync) out of the recording. A scraper passes them to its launch:
    `args: process.env.KILLTEST_BROWSER_ARGS.split(" ")` in Puppeteer, `args=` in Playwright."""
    return [f"--proxy-server={proxy}",
            "--proxy-bypass-list=<-loopback>",  # Chromium bypasses a proxy for loopback unless told not to
            f"--ignore-certificate-errors-spki-list={spki}",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-domain-reliability", "--no-pings", "--no-first-run",
            "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication"]


class ReplaySite(SiteServer):
    """SiteServer for a RecordedSite: `base_url` is the recording's start URL, reached through the proxy."""

    def __init__(self, site: RecordedSite, confdir: str, python: str,
                 register: Callable[[int], None] = lambda pid: None, **settings) -> None:
        super().__init__(site, **settings)
        self.recorded_site = site
        self._confdir, self._python, self._register = confdir, python, register
        self._upstream_file = os.path.join(confdir, "upstream-port")
        self.proxy: ProxyProcess | None = None
        self._app.add_url_rule("/<path:target>", "replay", self._replay, methods=["GET", "HEAD", "POST"],
                               merge_slashes=False)

    def _replay(self, target: str) -> Response:
        url = request.path[1:]
        found = self.recorded_site.answer(request.method, url)
        if found is None:
            return Response(f"killtest: {url} is not in the recording\n", 404, mimetype="text/plain",
                            headers={UNRECORDED: "1"})
        response = Response(found.body, found.status)
        response.headers.clear()
        for name, value in found.headers:
            response.headers.add(name, value)
        response.headers["Content-Length"] = str(len(found.body))
        return response

    def set_catalog(self, catalog, version: int = 0) -> None:
        if catalog is self.recorded_site:
            return  # the run putting the site back as it was
        raise RuntimeError("a recorded site has one version: drift does not apply to it")

    @property
    def base_url(self) -> str:
        return self.recorded_site.start_url

    def scraper_env(self) -> dict[str, str]:
        assert self.proxy is not None
        return self.proxy.scraper_env()

    def open_door(self, workers: Callable[[], list[int]] | None = None) -> tuple[int, str]:
        # The proxy, not a worker, connects to the door: requests are credited to starts only.
        door, url = super().open_door()
        self._point_proxy_at(int(url.rsplit(":", 1)[1]))
        return door, self.recorded_site.start_url

    def _point_proxy_at(self, port: int) -> None:
        with open(self._upstream_file + ".tmp", "w", encoding="utf-8") as out:
            out.write(str(port))
        os.replace(self._upstream_file + ".tmp", self._upstream_file)

    def start(self) -> ReplaySite:
        super().start()
        self._point_proxy_at(int(super().base_url.rsplit(":", 1)[1]))  # no door yet: the server's own port
        try:
            self.proxy = ProxyProcess(["replay", "--upstream-file", self._upstream_file,
                                       *self.recorded_site.redaction.as_args()], self._confdir, self._python,
                                      self._register)
        except BaseException:
            super().stop()
            raise
        return self

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        super().stop()

    def close_doors(self) -> None:
        super().close_doors()
        self._point_proxy_at(int(super().base_url.rsplit(":", 1)[1]))

