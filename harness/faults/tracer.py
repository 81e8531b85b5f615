"""Run a Python design with a tracer that SIGKILLs its own process at the n-th execution of one line.

    KILLTEST_KILL_AT=/abs/path/file.py:LINE:HIT python -m killtest.harness.faults.tracer MODULE [ARGS...]

The tracer fires before the line runs, so the process dies with everything up to the line before
done and nothing of the line itself: an exact crash point, the same on every repeat.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys

ENVIRONMENT_VARIABLE = "KILLTEST_KILL_AT"


def install(path: str, line: int, hit: int) -> None:
    target = os.path.realpath(path)
    same_file: dict[str, bool] = {}
    executions = 0

    def on_line(frame, event, arg):
        nonlocal executions
        if event == "line" and frame.f_lineno == line:
            executions += 1
            if executions == hit:
                os.kill(os.getpid(), signal.SIGKILL)
        return on_line

    def on_call(frame, event, arg):
        # Only frames of the target file get a line tracer, so the rest of the program runs at full speed.
        name = frame.f_code.co_filename
        if name not in same_file:
            same_file[name] = os.path.realpath(name) == target
        return on_line if same_file[name] else None

    sys.settrace(on_call)


def main() -> None:
    path, line, hit = os.environ.pop(ENVIRONMENT_VARIABLE).rsplit(":", 2)
    module, sys.argv = sys.argv[1], [sys.argv[1], *sys.argv[2:]]
    install(path, int(line), int(hit))
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
