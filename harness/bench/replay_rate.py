"""What replaying a recording costs: requests a second through the replay against the native shop, and the WARC's size.

    python -m killtest.harness.bench.replay_rate [--seconds 4]

The 500-product shop (25 listing pages of 20) is recorded by the built-in naive design through
`killtest record`'s proxy (the shop reached as http://shop.test), then the same sequential client
(killtest.harness.bench.site_rate: requests.Session with keep-alive) fetches the same paths from the
native shop and through the replay (mitmproxy, then the shop's own server answering from the WARC).
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from killtest.fixture_site.catalog import build_catalog
from killtest.fixture_site.server import SiteServer
from killtest.harness import lifeline
from killtest.harness.bench.site_rate import measure
from killtest.harness.campaigns.record_site import record_design
from killtest.harness.design.model import PROJECT_ROOT
from killtest.harness.design.site_spec import site_of
from killtest.harness.design.specfile import load_spec
from killtest.harness.running.recorded import load_site, replaying

HOST = "shop.test"


def shop_spec(folder: str) -> str:
    """The naive design's spec, extended with a [site] table naming a recording in `folder`."""
    path = os.path.join(folder, "shop.toml")
    with open(path, "w", encoding="utf-8") as out:
        out.write(f'extends = "{os.path.join(PROJECT_ROOT, "scrapers", "naive.toml")}"\n'
                  f'[site]\nrecording = "shop.warc.gz"\nstart_url = "http://{HOST}"\n')
    return path


def through(env: dict[str, str], base_url: str, paths: list[str], seconds: float) -> float:
    """site_rate's client, run with the replay's proxy variables."""
    done = subprocess.run([sys.executable, "-m", "killtest.harness.bench.site_rate", base_url, ",".join(paths),
                           str(seconds)], capture_output=True, text=True, timeout=seconds + 60, cwd=PROJECT_ROOT,
                          env={**os.environ, **env})
    if done.returncode != 0:
        raise RuntimeError(f"the client failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)["requests_per_s"]


def replay_rate(seconds: float = 4.0) -> dict:
    catalog = build_catalog()
    paths = [f"/list/{n}" for n in range(catalog.listing_pages)] + [p.path for p in catalog.products]
    lifeline.ensure_watchdog()
    with lifeline.temp_dir(prefix="killtest-bench-replay-") as folder:
        design = load_spec(shop_spec(folder))
        with SiteServer(catalog) as shop:
            native = measure(shop.base_url, paths, seconds)
            began = time.monotonic()
            made = record_design(design, [f"{HOST}:80=127.0.0.1:{shop.base_url.rsplit(':', 1)[1]}"], False, 300)
            record_s = time.monotonic() - began
        with replaying(load_site(site_of(design))) as replay:  # type: ignore[arg-type]  # its spec has [site]
            replayed = through(replay.scraper_env(), f"http://{HOST}", paths, seconds)
            served = replay.request_log.total
    return {"native_requests_per_s": native, "replay_requests_per_s": replayed,
            "replay_share_of_native": round(replayed / native, 3), "replay_requests_logged": served,
            "warc_bytes": made.warc_bytes, "exchanges": made.exchanges, "reference_records": made.records,
            "reference_requests": made.requests, "record_command_s": round(record_s, 1)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="replay_rate")
    parser.add_argument("--seconds", type=float, default=4.0)
    print(json.dumps(replay_rate(parser.parse_args().seconds), indent=1))
