"""The fixture site's own ceiling: how many pages a second one sequential client gets from it.

Run as a separate process (`python -m killtest.harness.bench.site_rate BASE_URL PATHS SECONDS`) so the client
does not share the site's interpreter: it uses requests.Session with keep-alive, as the designs do,
and no design that fetches one page at a time can go faster than this.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from killtest.harness.design.model import PROJECT_ROOT

WINDOWS = 5


def measure(base_url: str, paths: list[str], seconds: float = 2.0) -> float:
    """The most requests per second a sequential client got in any fifth of `seconds`, cycling through
    `paths`: a ceiling, so the best window counts (on two cores a window can lose the CPU to anything)."""
    done = subprocess.run([sys.executable, "-m", "killtest.harness.bench.site_rate", base_url, ",".join(paths),
                           str(seconds)],
                          capture_output=True, text=True, timeout=seconds + 60, cwd=PROJECT_ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"the site-rate client failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)["requests_per_s"]


def _client(base_url: str, paths: list[str], seconds: float) -> None:
    import requests

    session = requests.Session()
    session.get(base_url + paths[0]).raise_for_status()  # connect once before the clock starts
    best, count = 0.0, 0
    for _ in range(WINDOWS):
        done, began = 0, time.perf_counter()
        while time.perf_counter() - began < seconds / WINDOWS:
            session.get(base_url + paths[count % len(paths)]).raise_for_status()
            count, done = count + 1, done + 1
        best = max(best, done / (time.perf_counter() - began))
    print(json.dumps({"requests_per_s": round(best, 1)}))


if __name__ == "__main__":
    _client(sys.argv[1], sys.argv[2].split(","), float(sys.argv[3]))
