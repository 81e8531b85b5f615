#!/usr/bin/env python3
"""CI's phase table (issue 46): each step's start, end, wall and CPU seconds, and each env build, read from CI's
own log rather than a stopwatch (docs/reference/tests.md, "Where CI's minutes go").

    phases.py step NAME COMMAND...   run COMMAND, append its row to $KILLTEST_CI_PHASES, exit with its status
    phases.py table                  print the table of $KILLTEST_CI_PHASES and $KILLTEST_ENV_LOG, and write it
                                     as JSON beside the first (phases.json)

A step's CPU seconds are user + sys of the processes it waited for (os.wait4's rusage of the step's process:
its children, theirs, and so on, as long as each was waited for): on two cores, CPU is what a step costs the
others. tests/steps.py appends rows for make test's two steps the same way, and harness/env_builds.py a line for
each env build, wait and failure (KILLTEST_ENV_LOG). Standard library only: it runs before .venv exists.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

PHASES, ENV_LOG, T0 = "KILLTEST_CI_PHASES", "KILLTEST_ENV_LOG", "KILLTEST_CI_T0"


def append(path: str | None, row: dict) -> None:
    """One JSON line, in append mode (steps beside each other write to the same file)."""
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")


def run_step(name: str, command: list[str]) -> int:
    """COMMAND as a child, its row appended when it ends (whatever its status); its exit status, or 128 + the
    signal that ended it, as a shell gives it."""
    began = time.time()
    try:
        child = subprocess.Popen(command)
    except OSError as error:
        print(f"ci: {name}: cannot run {command[0]}: {error.strerror}", file=sys.stderr)
        return 127
    while True:
        try:
            _, status, usage = os.wait4(child.pid, 0)
            break
        except KeyboardInterrupt:  # the child got the SIGINT too: wait for it to end
            continue
    code = os.waitstatus_to_exitcode(status)
    exit_status = 128 - code if code < 0 else code
    append(os.environ.get(PHASES), {"step": name, "start": round(began, 2), "end": round(time.time(), 2),
                                    "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "status": exit_status})
    return exit_status


def read_lines(path: str | None) -> list[dict]:
    if not path or not os.path.exists(path):
        return []
    rows = []
    with open(path, encoding="utf-8") as src:
        for line in src:
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a line cut short by a step killed mid-write
    return rows


def table(steps: list[dict], envs: list[dict], t0: float, end: float, ci_cpu_s: float | None,
          cores: int, cache: str = "") -> list[str]:
    """The lines a person reads at the end of CI's log: steps in the order they began, then CI in all, then one
    line per env build (built, waited for another's build, cached, failed) in the order they ended; an env in a
    cache other than `cache` (a test's own, in a temporary folder) is marked with a *."""
    lines = [f"ci: phase table (seconds from CI's start at {time.strftime('%H:%M:%S', time.gmtime(t0))} UTC; CPU ="
             " user + sys of the processes each step waited for)",
             f"{'step':<34} {'start':>6} {'end':>6} {'wall':>7} {'CPU':>7}  status"]
    for row in sorted(steps, key=lambda r: r["start"]):
        wall = row["end"] - row["start"]
        status = "ok" if row["status"] == 0 else f"exit {row['status']}"
        lines.append(f"{row['step'][:34]:<34} {row['start'] - t0:6.0f} {row['end'] - t0:6.0f} {wall:7.1f}"
                     f" {row['cpu_s']:7.1f}  {status}")
    if ci_cpu_s is None:
        lines.append(f"{'CI in all':<34} {0:6.0f} {end - t0:6.0f} {end - t0:7.1f} {'?':>7}")
    else:
        busy = ci_cpu_s / max(end - t0, 1e-9)
        lines.append(f"{'CI in all':<34} {0:6.0f} {end - t0:6.0f} {end - t0:7.1f} {ci_cpu_s:7.1f}  {busy:.2f} of"
                     f" {cores} cores busy on average")
    if envs:
        lines.append(f"ci: env builds ({len([e for e in envs if e['event'] == 'built'])} built; waited = ready when"
                     " another process's build of it ended; start and end in seconds from CI's start)")
        lines.append(f"{'env':<26} {'start':>6} {'end':>6} {'secs':>7}  {'what':<7} {'by':<4} {'pins':<40} asked by")
        def by(env: dict) -> str:  # the installer of a build: uv, pip or npm (harness/env_installs.py)
            return (env.get("installer") or "-").split(" ")[0]

        def own(env: dict) -> bool:  # built in a test's own cache, not CI's
            return bool(cache) and os.path.dirname(env.get("root", "")) != cache

        for env in sorted(envs, key=lambda e: e["at"]):
            pins = " ".join(env["packages"])
            if len(pins) > 40:
                pins = pins[:37] + "..."
            name = env["env"] + ("*" if own(env) else "")
            lines.append(f"{name:<26} {env['at'] - env['seconds'] - t0:6.0f} {env['at'] - t0:6.0f}"
                         f" {env['seconds']:7.1f}  {env['event']:<7} {by(env):<4} {pins:<40} {env.get('asker', '')}")
        if any(own(env) for env in envs):
            lines.append(f"ci: * in a test's own cache, not CI's ({cache})")
        built: dict[tuple[str, str], int] = {}
        for env in envs:
            if env["event"] == "built":
                key = (env.get("root", ""), env["env"])
                built[key] = built.get(key, 0) + 1
        twice = sorted(name for (_, name), count in built.items() if count > 1)
        if twice:
            lines.append(f"ci: built more than once in one cache: {', '.join(twice)}")
    return lines


def children_cpu_s(pid: int) -> float | None:
    """CPU seconds of the processes `pid` has waited for (cutime + cstime of /proc/PID/stat): CI's shell's, at the
    end, is every step's."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as src:
            fields = src.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # fields 16 and 17 of proc(5)


def print_table() -> int:
    path = os.environ.get(PHASES)
    steps, envs = read_lines(path), read_lines(os.environ.get(ENV_LOG))
    now = time.time()
    t0 = float(os.environ.get(T0) or min([r["start"] for r in steps] or [now]))
    ci_cpu_s = children_cpu_s(os.getppid())
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "killtest")
    for line in table(steps, envs, t0, now, ci_cpu_s, os.cpu_count() or 1, cache):
        print(line)
    if path:
        where = os.path.join(os.path.dirname(path), "phases.json")
        with open(where, "w", encoding="utf-8") as out:
            json.dump({"t0": t0, "end": now, "ci_cpu_s": ci_cpu_s, "steps": steps, "envs": envs}, out, indent=1)
        print(f"ci: the phase table as JSON: {where}")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "step":
        return run_step(argv[1], argv[2:])
    if argv == ["table"]:
        return print_table()
    print("usage: phases.py step NAME COMMAND... | phases.py table", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
