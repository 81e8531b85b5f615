"""`killtest record`: run a design once against its real site through a recording proxy, then make the reference.

1. record: the design runs once, uninterrupted, with its HTTP and HTTPS traffic going through
   mitmproxy (killtest.fixture_site.recordings.replay_proxy, record mode), which writes every exchange to the
   WARC file the spec's [site] table names;
2. replay twice: two uninterrupted runs against the replay of that WARC. They must agree record for
   record (else the scraper or the recording is nondeterministic: one line naming the records that
   differ), and ask for nothing the recording does not hold;
3. the reference: their records and request count, written beside the WARC; every later run is
   checked against it by key and field (killtest.fixture_site.recordings.recorded_site.RecordedSite).

The new WARC and reference are written as `x.partial.*` and renamed over the old ones only once both
are complete; before that, what changed against the old recording is said (recording_changes.py).
The proxy masks credentials before it writes anything (killtest.fixture_site.recordings.redaction).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from killtest.fixture_site.recordings.recorded_site import record_counts, reference_path, write_reference
from killtest.fixture_site.recordings.replay import ProxyProcess
from killtest.harness import lifeline
from killtest.harness.campaigns.recording_changes import Changes, compare
from killtest.harness.design.model import Design, Launch
from killtest.harness.design.site_spec import SiteSpec, site_of
from killtest.harness.design.stores import stored_records
from killtest.harness.errors import KilltestError
from killtest.harness.faults.schedule import KillSchedule
from killtest.harness.history import History
from killtest.harness.running.collect import stderr_tail
from killtest.harness.running.orchestrator import run_phase, stage
from killtest.harness.running.processes import spawn
from killtest.harness.running.recorded import load_site, proxy_python, redaction_of
from killtest.harness.running.runner import RunSettings

UNINTERRUPTED = KillSchedule(seed=None, points=())
EXAMPLES = 5


@dataclass
class Recorded:
    """What `killtest record` made."""

    recording: str
    reference: str
    warc_bytes: int
    exchanges: int  # what the recording run asked and was answered: the WARC's request records
    records: int
    requests: int
    record_s: float
    changes: Changes | None = None  # against the recording this one replaced; None when there was none
    pages: int = 0  # distinct requests (method and masked URL): what the replay can answer
    revisits: int = 0  # answers whose payload was stored already: revisit records


def partial_path(recording: str) -> str:
    """Where a new recording is written until it is complete: `x.warc.gz` -> `x.partial.warc.gz`, its
    reference then `x.partial.reference.json`; the old files stay as they are until both are done."""
    base = recording[:-len(".warc.gz")] if recording.endswith(".warc.gz") else os.path.splitext(recording)[0]
    return base + ".partial.warc.gz"


def record_design(design: Design, resolve: list[str], insecure_upstream: bool, time_limit_s: float,
                  on_progress: Callable[[str], None] = lambda message: None) -> Recorded:
    site = site_of(design)
    if site is None:
        raise KilltestError(f"design {design.name!r}: its spec has no [site] table naming a recording"
                            " (recording = \"site.warc.gz\", start_url = \"https://...\")")
    if design.store.kind in ("postgres", "redis"):
        raise KilltestError(f"design {design.name!r}: recording supports designs with file stores for now")
    lifeline.ensure_watchdog()
    partial = replace(site, recording=partial_path(site.recording))
    try:
        return _record(design, site, partial, resolve, insecure_upstream, time_limit_s, on_progress)
    finally:  # a failed recording leaves no half-made file behind, and the old recording as it was
        for path in (partial.recording, reference_path(partial.recording), partial.recording + ".collisions",
                     partial.recording + ".collisions.tmp"):
            with contextlib.suppress(OSError):
                os.remove(path)


def _record(design: Design, site: SiteSpec, partial: SiteSpec, resolve: list[str], insecure_upstream: bool,
            time_limit_s: float, on_progress: Callable[[str], None]) -> Recorded:
    began = time.monotonic()
    on_progress(f"recording {site.start_url} through the proxy into {site.recording}")
    _record_once(design, partial, resolve, insecure_upstream, time_limit_s)
    record_s = time.monotonic() - began
    _say_collisions(partial.recording, on_progress)
    replayed = load_site(partial, need_reference=False)
    if not replayed.exchanges:  # it stored records without asking the proxy: it went around it, to the live site
        raise KilltestError(f"design {design.name!r} made no request through the recording proxy: it does not"
                            " honour HTTP_PROXY/HTTPS_PROXY (set its HTTP client's proxy from them), so killtest"
                            " cannot record or replay its site")
    kinds = record_counts(partial.recording)
    on_progress(f"recorded {kinds['request']} exchanges ({len(replayed.exchanges)} distinct requests) in"
                f" {record_s:.1f}s; replaying it twice")
    settings = RunSettings(time_limit_s=time_limit_s, no_progress_s=None)
    with stage(replayed, [design]) as on:
        runs = [run_phase(on, design, UNINTERRUPTED, settings, prefix="killtest-record-") for _ in range(2)]
    records = [_records_of(history, design, number) for number, history in enumerate(runs, start=1)]
    _refuse_disagreement(design, records[0], records[1])
    for number, history in enumerate(runs, start=1):
        unrecorded = sorted({r["path"][1:] for r in history.of_type("request") if not replayed.recorded(r["path"])})
        if unrecorded:
            raise KilltestError(f"replay {number} asked for {len(unrecorded)} URL(s) the recording does not hold"
                                f" ({', '.join(unrecorded[:EXAMPLES])}): the scraper is nondeterministic")
    requests = max(len(history.of_type("request")) for history in runs)
    if min(len(history.of_type("request")) for history in runs) == 0:
        raise KilltestError(f"design {design.name!r} made no request to the replay: it does not honour"
                            " HTTP_PROXY/HTTPS_PROXY, so its runs would meet the live site, not the recording")
    new_reference = write_reference(partial.recording, site.start_url, requests, records[0])
    try:
        changes = compare(site.recording, replayed, records[0])
    except ValueError as error:
        on_progress(f"the recording being replaced could not be compared with the new one: {error}")
        changes = None
    if changes is not None:
        for line in ["the live site against the recording being replaced:" if not changes.none
                     else "the live site against the recording being replaced: nothing changed", *changes.lines()]:
            on_progress(line)
    reference = reference_path(site.recording)
    os.replace(partial.recording, site.recording)  # the WARC first: it is what a reference is checked against
    os.replace(new_reference, reference)
    return Recorded(site.recording, reference, os.path.getsize(site.recording), kinds["request"], len(records[0]),
                    requests, round(record_s, 2), changes, len(replayed.exchanges), kinds["revisit"])


def _say_collisions(recording: str, on_progress: Callable[[str], None]) -> None:
    """Masked URLs that stood for several real ones with different answers (the proxy lists them)."""
    try:
        with open(recording + ".collisions", encoding="utf-8") as src:
            collided = json.load(src)
    except (OSError, ValueError):
        return
    if collided:
        on_progress(f"warning: {len(collided)} masked URL(s) stood for several real URLs with different answers, so"
                    f" the replay serves one answer for all of them: {', '.join(collided[:EXAMPLES])}; if the masked"
                    " parameter is not a credential, keep it with [site] unredacted")


def _record_once(design: Design, site: SiteSpec, resolve: list[str], insecure_upstream: bool,
                 time_limit_s: float) -> None:
    """The one live run, through the recording proxy, into the WARC `site` names (the partial one)."""
    try:
        os.makedirs(os.path.dirname(site.recording), exist_ok=True)
    except OSError as error:
        raise KilltestError(f"cannot create the recording's folder {os.path.dirname(site.recording)}:"
                            f" {error.strerror}") from None
    args = ["record", "--warc", os.path.abspath(site.recording), *(f"--resolve={r}" for r in resolve),
            *redaction_of(site).as_args()]
    python = proxy_python()  # its env built before the recording run's clock starts
    with lifeline.temp_dir(prefix="killtest-record-") as scratch:
        try:
            proxy = ProxyProcess(args + (["--insecure-upstream"] if insecure_upstream else []), scratch, python,
                                 lifeline.register)
        except RuntimeError as error:
            raise KilltestError(str(error)) from None
        try:
            launch = Launch(base_url=site.start_url, work_dir=scratch, lease_s=3.0)
            env_design = replace(design, env=tuple(sorted({**dict(design.env), **proxy.scraper_env()}.items())))
            start = spawn(env_design, launch, 0)
            try:
                returncode = start.workers[0].process.wait(timeout=time_limit_s)
            except subprocess.TimeoutExpired:
                start.kill()
                raise KilltestError(f"design {design.name!r} did not finish its recording run in {time_limit_s:g}s"
                                    " (--time-limit)") from None
            start.reap()
            if returncode != 0:
                tail = redaction_of(site).text((stderr_tail(start.workers[0].stderr_path) or ["(no output)"])[-1])
                raise KilltestError(f"design {design.name!r} exited with status {returncode} while recording: {tail}")
            if not stored_records(design, design.store_location(launch)):
                raise KilltestError(f"design {design.name!r} stored no record while recording {site.start_url}")
        finally:
            proxy.stop()


def _records_of(history: History, design: Design, number: int) -> dict[str, dict[str, str]]:
    """One uninterrupted replay's records by key; it must have finished and stored each key once."""
    finished = history.first("run_finished") or {}
    if finished.get("outcome") != "completed":
        raise KilltestError(f"design {design.name!r}: replay {number} of the recording did not complete"
                            f" ({finished.get('outcome')})")
    records: dict[str, dict[str, str]] = {}
    for event in history.of_type("store_record"):
        if event["key"] is None:
            continue
        fields = {k: str(v) for k, v in event["fields"].items()}
        if records.setdefault(event["key"], fields) != fields:
            raise KilltestError(f"design {design.name!r}: replay {number} stored {event['key']!r} twice with different"
                                " values, so it cannot be a reference")
    return records


def _refuse_disagreement(design: Design, first: dict, second: dict) -> None:
    differ = sorted(k for k in set(first) | set(second) if first.get(k) != second.get(k))
    if differ:
        raise KilltestError(f"design {design.name!r}: two uninterrupted replays disagree on {len(differ)} record(s)"
                            f" ({', '.join(differ[:EXAMPLES])}): the scraper or the recording is nondeterministic")
