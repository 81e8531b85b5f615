"""What a firing kill point can reach in a run: the running start, its workers, the store's server.

The runner (killtest.harness.running.runner) hands a `StartTarget` to `point.fire`; it implements the
`Target` protocol of killtest.harness.faults.points. A pause (killtest.harness.faults.points.pause) is the
one action that is not a kill: it writes `paused` when it sends SIGSTOP and `resumed` when it sends
SIGCONT, and the start goes on. A power cut (killtest.harness.faults.points.power_cut) SIGKILLs the start
and then cuts the power of the mount `power_loss_mount` put over the run's work dir: `power_lost`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from killtest.harness.defaults import AIM_PAUSE_WAIT_S
from killtest.harness.errors import KilltestError
from killtest.harness.faults.power_loss import PowerLossMount
from killtest.harness.running.processes import Start

if TYPE_CHECKING:
    from killtest.harness.running.runner import _Run


class StartTarget:
    """The running start of `run`, in crawl `crawl`, as a point may act on it."""

    def __init__(self, run: _Run, crawl: int, point: str = "") -> None:
        self.run, self.crawl, self.point = run, crawl, point
        assert run.current is not None
        self.start: Start = run.current

    def kill(self) -> int:
        return self.start.kill()

    def redeploy(self, grace_s: float) -> int:
        return self.start.redeploy(grace_s)

    def restart_worker(self, worker: int, grace_s: float | None) -> tuple[int, int]:
        return self.start.restart_worker(worker, grace_s, self.run.design, self.run.launch_for(self.crawl),
                                         self.run.launcher)

    def restart_store(self) -> float:
        assert self.run.restart_store is not None  # checked by the point before the run began
        return self.run.restart_store()

    def pause(self, worker: int | None, seconds: float) -> float:
        """SIGSTOP the workers' process groups and freeze their cgroups, sleep (never past the run's time
        limit), SIGCONT them.

        The runner's thread waits out the pause: the other workers go on meanwhile, and the next point's
        delay counts from the resume. Whatever interrupts the sleep, the groups are continued (a stopped
        group would still die of the SIGKILL that ends the run, but a resumed one dies the same way).
        """
        history, began = self.run.history, self.run.began
        groups = self.start.pids if worker is None else [self.start.pids[worker - 1]]
        workers = self.start.workers if worker is None else [self.start.workers[worker - 1]]
        boxes = [w.box for w in workers if w.box is not None]
        aimed_at = None
        if self.run.settings.aim_pauses and worker is not None:
            aimed_at, stopped = stop_at_its_next_product_request(self.run, groups[0])
        else:
            stopped = [group for group in groups if _signal_group(group, signal.SIGSTOP)]
        _until_stopped(stopped)  # frozen first, a process would never show the stop: keep SIGSTOP's meaning
        for box in boxes:  # a process that left the group (a detached browser) is paused too
            box.freeze(True)
        paused_at = time.monotonic()
        history.add("paused", paused_at - began, start=self.start.index, worker=worker, pids=stopped,
                    seconds=seconds, point=self.point, **({"aimed_at": aimed_at} if aimed_at else {}))
        if self.run.settings.aim_pauses and worker is not None and stopped:
            self.run.site.set_request_hook(aimed_drift(self.run, stopped[0], paused_at, aimed_at))
        try:
            time.sleep(max(0.0, min(seconds, self.run.deadline - paused_at)))
        finally:
            if self.run.settings.aim_pauses:
                self.run.site.set_request_hook(None)
            for box in boxes:
                box.freeze(False)
            for group in stopped:
                _signal_group(group, signal.SIGCONT)
            resumed_at = time.monotonic()
            history.add("resumed", resumed_at - began, start=self.start.index, worker=worker, pids=stopped,
                        seconds=round(resumed_at - paused_at, 4), point=self.point)
        return resumed_at - paused_at

    def lose_power(self) -> dict[str, Any]:
        """SIGKILL every worker's group, then cut the power: what no fsync made durable is gone.

        The starts' own .out and .err files are the harness's logs, which a real machine would have
        shipped elsewhere: they are kept as they were and left out of what `power_lost` says was lost.
        """
        run = self.run
        mount: PowerLossMount | None = run.power_loss_mount
        assert mount is not None, "a power-cut point runs only under its mount (runner.run_kill_test)"
        self.start.kill()  # the machine went dark: nothing of the start runs on
        logs = {path: _read(path) for start in run.starts for path in _output_paths(start)}
        before = _sizes(mount.directory)
        lost = mount.lose()
        for path, data in logs.items():
            if data is not None:
                with open(path, "wb") as log:
                    log.write(data)
        after = _sizes(mount.directory)
        own = {os.path.relpath(os.path.realpath(path), mount.directory) for path in logs}
        names_lost = [name for name in lost["names_lost"] if name not in own]
        reverted = [name for name in lost["bytes_reverted"] if name not in own]
        gone = [path for path in before if any(path == name or path.startswith(name + "/") for name in names_lost)]
        bytes_lost = sum(before[path] for path in gone) + sum(
            max(0, before.get(name, 0) - after.get(name, 0)) for name in reverted)
        fields = {"names_lost": names_lost, "names_restored": lost["names_restored"], "bytes_reverted": reverted,
                  "files": len(set(gone) | set(reverted)), "bytes": bytes_lost}
        run.history.add("power_lost", run.since_began(), start=self.start.index, point=self.point, **fields)
        return fields


def stop_at_its_next_product_request(run: _Run, group: int) -> tuple[str | None, list[int]]:
    """SIGSTOP worker `group` the moment its next request for a product page reaches the site, before the site
    answers (--aim-pauses): it has claimed that page and holds it, and holds no lock (a claim's transaction is
    over before its page is asked for), so a pause past the lease always leaves a page to take over. The
    site tells which worker asked from the request's connection (fixture_site/socket_owner.py). (the page's
    path, [group]) once stopped; when the worker asks for no product page within AIM_PAUSE_WAIT_S, before it
    exits or before the run's time is up, (None, [group]) stopped then, unaimed, or (None, []) when it is gone."""
    asked: list[str] = []
    stopped = threading.Event()

    def hook(path: str, worker_pid: int | None) -> None:
        if worker_pid == group and path.startswith("/product/") and not stopped.is_set():
            if _signal_group(group, signal.SIGSTOP):  # in the site's thread, before it answers
                asked.append(path)
            stopped.set()

    run.site.set_worker_request_hook(hook)
    given_up = min(run.deadline, time.monotonic() + AIM_PAUSE_WAIT_S)
    try:
        while not stopped.wait(0.005):
            if time.monotonic() >= given_up or not _alive(group):
                break
    finally:
        run.site.set_worker_request_hook(None)
    if asked:
        return asked[0], [group]
    return None, [group] if _signal_group(group, signal.SIGSTOP) else []


def _alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
        return True
    except ProcessLookupError:
        return False


def aimed_drift(run: _Run, paused_pid: int, paused_at: float, holds: str | None = None):
    """A request hook for the length of a pause (--aim-pauses): when another worker asks for a product page
    the paused one holds, the site reprices that product first. The taker is served the new price; a
    zombie commit puts the old one back, a stale value the checker sees in the store whether or not the
    design reports its claims. The page it holds: the product page the site credited to it last (it
    fetched it and has not woken to commit it); where the site could not credit its requests to a worker
    (fixture_site/socket_owner.py falls back to timing), any product page served before the pause and
    asked for again during it, which only a takeover does. `holds`: the page it was stopped asking for, when the
    pause was aimed at its request (stop_at_its_next_product_request): that is the page it holds."""
    aimed: set[str] = set()

    def hook(path: str) -> None:
        if not path.startswith("/product/") or path in aimed or run.drift is None:
            return
        served = [r for r in run.site.request_log.snapshot() if r.status == 200 and r.path.startswith("/product/")]
        mine = [holds] if holds else [r.path for r in served if r.worker_pid == paused_pid]
        held = path == mine[-1] if mine else any(r.path == path and r.t < paused_at for r in served)
        if held:
            aimed.add(path)
            run.drift.reprice({path})
    return hook


@contextlib.contextmanager
def power_loss_mount(run: _Run, work_dir: str) -> Iterator[None]:
    """The power-loss file system over `work_dir` for the whole run when a point of its schedule cuts the
    power (`needs_power_loss_mount`), left on the way out, which puts the surviving files back; else nothing."""
    if not any(getattr(point, "needs_power_loss_mount", False) for point in run.schedule.points):
        yield
        return
    root = os.path.realpath(work_dir)
    if not os.path.realpath(run.location).startswith(root + os.sep):
        raise KilltestError(f"a power cut drops what the run's work dir did not make durable, but design"
                            f" {run.design.name!r} keeps its store outside it ({run.location})")
    with PowerLossMount(work_dir) as mount:
        run.power_loss_mount = mount
        try:
            yield
        finally:
            run.power_loss_mount = None


def _output_paths(start: Start) -> list[str]:
    return [path for worker in start.retired + start.workers for path in (worker.stdout_path, worker.stderr_path)]


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as data:
            return data.read()
    except FileNotFoundError:
        return None


def _sizes(root: str) -> dict[str, int]:
    """Every file under `root` by its path relative to it, with its size."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with contextlib.suppress(OSError):
                found[os.path.relpath(path, root)] = os.lstat(path).st_size
    return found


def _until_stopped(groups: list[int], patience_s: float = 0.5) -> None:
    """Wait (briefly) until the leader of each group has taken its SIGSTOP (state T)."""
    until = time.monotonic() + patience_s
    for group in groups:
        while time.monotonic() < until:
            try:
                with open(f"/proc/{group}/stat", encoding="utf-8") as stat:
                    if stat.read().rsplit(")", 1)[1].split()[0] in ("T", "t", "Z", "X"):
                        break
            except OSError:
                break
            time.sleep(0.001)


def _signal_group(group: int, signum: int) -> bool:
    """Send `signum` to process group `group`; False when the group is gone (that worker had finished)."""
    try:
        os.killpg(group, signum)
        return True
    except ProcessLookupError:
        return False
