"""A campaign spread over two machines by pytest-xdist's `--tx ssh=...`, for real, and one of them killed.

examples/ssh-hosts/hosts.sh makes two test hosts on this machine: network namespaces with only their own
loopback, each with an sshd started for the test and keys made for it, reached through an ssh config
whose ProxyCommand is `ip netns exec <ns> socat STDIO TCP:127.0.0.1:22`. The killtest wheel, pytest and
pytest-xdist are installed once in a venv that is shipped to each host over ssh (no rsync), with the
campaign's test file (examples/ssh-hosts/campaign/). Then, the commands of docs/how-to/pytest.md:

1. the campaign serially, here: every crash point's verdict;
2. the campaign on both hosts: every point the same verdict, and both hosts ran points;
3. the campaign on both hosts with `--killtest-resume FILE`, one host SIGKILLed (its sshd and every
   process in its namespace) mid-campaign: xdist cannot replace a worker whose host is gone, so the
   session ends with points unrun; the same command rerun on the host that is left runs only those,
   and FILE then holds every point's verdict, each the serial one.

Slow (a few minutes: a venv built and shipped twice, three campaigns), so marked `hosts`: `make test`
leaves it out and .ci/run runs it as its own step. It needs root, iproute2, openssh-server, socat.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from killtest.harness.design.model import PROJECT_ROOT

pytestmark = pytest.mark.hosts
pytest.importorskip("xdist")
HOSTS_SH = os.path.join(PROJECT_ROOT, "examples", "ssh-hosts", "hosts.sh")
CAMPAIGN = os.path.join(PROJECT_ROOT, "examples", "ssh-hosts", "campaign")


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "socat", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not os.path.exists("/usr/sbin/sshd"):
        return "openssh-server is not installed"
    return None


@pytest.fixture(scope="module")
def hosts():
    """Two hosts with the env and the campaign shipped to them: (dir, controller dir); all gone after."""
    why = _missing()
    if why:
        if os.environ.get("KILLTEST_REQUIRE_SERVERS"):
            pytest.fail(f"the ssh hosts test cannot run: {why}")
        pytest.skip(why)
    where = tempfile.mkdtemp(prefix="kt-ssh-")
    try:
        sh("up", where)
        # CI builds the wheel once for its jobs (KILLTEST_WHEEL): two builds of one checkout at once share its
        # build/ folder and one fails ("File exists").
        wheel = os.environ.get("KILLTEST_WHEEL")
        if not wheel:
            subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", PROJECT_ROOT, "-w",
                            os.path.join(where, "wheel")], check=True, capture_output=True, timeout=300)
            [wheel] = glob.glob(os.path.join(where, "wheel", "killtest-*.whl"))
        sh("ship", where, wheel, CAMPAIGN)
        controller = os.path.join(where, "controller")
        shutil.copytree(CAMPAIGN, controller)
        yield where, controller
    finally:
        subprocess.run(["bash", HOSTS_SH, "down", where], capture_output=True, timeout=120)
        shutil.rmtree(where, ignore_errors=True)


def sh(*args: str) -> None:
    done = subprocess.run(["bash", HOSTS_SH, *args], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"hosts.sh {args[0]}: {done.stderr[-3000:]}"


def tx(where: str, host: str) -> list[str]:
    """The --tx of one host, as the how-to writes it."""
    return ["--tx", f"ssh=kt-{host}//python={where}/hosts/{host}/env/bin/python"
                    f"//chdir={where}/hosts/{host}/project//ssh_config={where}/ssh_config"]


def pytest_args(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *args]


def outcomes(lines: str) -> dict[str, str]:
    return {m.group(2): m.group(1) for m in re.finditer(r"^(PASSED|FAILED) (\S+::\S+\])", lines, re.M)}


def test_every_point_gets_the_serial_verdict_on_two_ssh_hosts_and_none_is_lost_when_one_dies(hosts):
    where, controller = hosts
    serial = subprocess.run(pytest_args(), capture_output=True, text=True, cwd=controller, timeout=900)
    by_serial = outcomes(serial.stdout)
    assert len(by_serial) == 15, serial.stdout[-3000:]
    assert by_serial["test_campaign.py::test_crash_point[w68]"] == "FAILED"
    assert "PASSED" in by_serial.values()

    spread = subprocess.run(pytest_args("-v", "--dist", "load", *tx(where, "a"), *tx(where, "b")),
                            capture_output=True, text=True, cwd=controller, timeout=900)
    assert outcomes(spread.stdout) == by_serial, spread.stdout[-3000:]
    for host in ("a", "b"):  # both machines ran points, each with its own shipped Python
        assert f"{where}/hosts/{host}/env/bin/python" in spread.stdout

    # A host dies mid-campaign: its sshd, sessions, xdist worker and scrapers SIGKILLed at once.
    resume = os.path.join(where, "verdicts.jsonl")
    campaign = subprocess.Popen(pytest_args("--dist", "load", f"--killtest-resume={resume}", *tx(where, "a"),
                                            *tx(where, "b")), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, cwd=controller)
    try:
        deadline = time.monotonic() + 600
        while len(verdicts(resume)) < 4 and campaign.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        sh("kill", where, "b")
        cut_short, _ = campaign.communicate(timeout=600)
    finally:
        if campaign.poll() is None:
            campaign.kill()
            campaign.wait()
    first = verdicts(resume)
    assert 4 <= len(first) < 15, cut_short[-3000:]  # the kill landed mid-campaign: points were left unrun
    assert campaign.returncode != 0

    # The same command on the host that is left runs only the points without a verdict.
    rerun = subprocess.run(pytest_args("-v", "--dist", "load", f"--killtest-resume={resume}", *tx(where, "a")),
                           capture_output=True, text=True, cwd=controller, timeout=900)
    # (the workers deselect, so xdist's summary has no "deselected"; the plugin's header says what it kept)
    assert f"killtest resume: {len(first)} verdicts kept" in rerun.stdout, rerun.stdout[-3000:]
    assert set(outcomes(rerun.stdout)) == set(by_serial) - set(first)
    assert rerun.returncode == 1  # w68 fails, whichever session ran it
    final = verdicts(resume)
    assert {nodeid: outcome.upper() for nodeid, outcome in final.items()} == by_serial
    print(f"serial: {len(by_serial)} points, {list(by_serial.values()).count('FAILED')} failed; on hosts a"
          f" and b: the same {len(by_serial)} verdicts; host b killed after {len(first)} verdicts, the rerun"
          f" on host a ran the {len(by_serial) - len(first)} left; every point has its serial verdict")


def verdicts(path: str) -> dict[str, str]:
    try:
        with open(path) as source:
            return {entry["nodeid"]: entry["outcome"] for entry in map(json.loads, source)}
    except FileNotFoundError:
        return {}
