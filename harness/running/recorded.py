"""A recorded site in the orchestrator's phases: its catalog, its replay as the site, its scrapers' proxy.

When the designs of a plan name a recording (a spec's [site] table, killtest.harness.design.site_spec),
`site_catalog` loads it (killtest.fixture_site.recordings.recorded_site.RecordedSite, a Catalog the checker reads
unchanged), `replaying` serves it (killtest.fixture_site.recordings.replay.ReplaySite, behind a mitmproxy process
whose CA lives in a temporary directory the run owns), and `through_the_proxy` gives each design
the proxy and CA variables for its starts. The proxy runs on its own env's interpreter (`proxy_python`:
mitmproxy at exact pins, built on first use in ~/.cache/killtest/tools/, never in the user's environment).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

from killtest.fixture_site.catalog import Catalog
from killtest.fixture_site.recordings.recorded_site import RecordedSite, load_recorded_site
from killtest.fixture_site.recordings.redaction import Redaction
from killtest.fixture_site.recordings.replay import PROXY_PACKAGES, ReplaySite
from killtest.fixture_site.server import SiteServer
from killtest.harness import lifeline
from killtest.harness.design.model import Design
from killtest.harness.design.site_spec import SiteSpec, one_site
from killtest.harness.errors import KilltestError
from killtest.harness.tool_envs import ensure_env


def _to_stderr(message: str) -> None:
    print(f"killtest: {message}", file=sys.stderr, flush=True)


def proxy_python(say: Callable[[str], None] = _to_stderr) -> str:
    """The recording proxy's interpreter: its env of PROXY_PACKAGES, built (and said so) on first use, before
    any run's clock starts; then a folder check."""
    return ensure_env("python", PROXY_PACKAGES, say=say, kind="tools").python


def redaction_of(site: SiteSpec) -> Redaction:
    """What the recording proxy masks for this site: the defaults and the spec's [site] names."""
    return Redaction(site.redact_params, site.redact_headers, site.unredacted)


def load_site(site: SiteSpec, need_reference: bool = True) -> RecordedSite:
    try:
        return load_recorded_site(site.recording, site.start_url, site.ignore_params, need_reference,
                                  redaction_of(site))
    except ValueError as error:
        raise KilltestError(f"{site.spec_file}: {error}") from None


def site_catalog(designs: Sequence[Design], catalog: Catalog) -> Catalog:
    """The recorded site the designs name, or `catalog` (the shop) when they name none."""
    if isinstance(catalog, RecordedSite):
        return catalog
    site = one_site(designs)
    return catalog if site is None else load_site(site)


@contextlib.contextmanager
def replaying(site: RecordedSite, **settings) -> Iterator[ReplaySite]:
    """The recording served as the site (latency, slow pages, pace as for the shop) until the block ends."""
    python = proxy_python()
    with lifeline.temp_dir(prefix="killtest-proxy-") as confdir:
        replay = ReplaySite(site, confdir, python, register=lifeline.register, **settings)
        try:
            replay.start()
        except RuntimeError as error:
            raise KilltestError(str(error)) from None
        try:
            yield replay
        finally:
            replay.stop()


def through_the_proxy(design: Design, site: SiteServer) -> Design:
    """The design with the proxy's variables added to its environment, when the site is a replay."""
    if not isinstance(site, ReplaySite):
        return design
    return replace(design, env=tuple(sorted({**dict(design.env), **site.scraper_env()}.items())))


def refuse_drift(site: SiteServer, drift) -> None:
    if isinstance(site, ReplaySite) and drift is not None:
        raise KilltestError("--drift does not apply to a recorded site: a recording holds one version of it")
