"""Command lines as a reader pastes them: from the repository root, whichever checkout ran them.

A case's runs, bisections and explorations record their commands whole (`/work/wt/x/.venv/bin/killtest
explore --design /work/wt/x/scrapers/... --out /work/wt/x/results/...`): cases.json, bisect.json and
explore.json keep them so, with the checkout they ran in (`root`), to paste from anywhere. A page written
inside a checkout (results/cases/*.md, docs/explanation/analyses.md, committed) gives them from its root
instead (`.venv/bin/killtest explore --design scrapers/... --out results/...`), so it reads the same in any
clone, whichever checkout measured it; and a case env under the home folder as `~/.cache/killtest/...`,
which the shell expands in an assignment (`PATH=~/.cache/killtest/cases/<hash>/bin:"$PATH"`), and anywhere else
a path inside killtest's tool envs (a located frame's file: `in f (~/.cache/killtest/cases/<hash>/node_modules/...)`).
"""

from __future__ import annotations

import os
import re

from killtest.harness.design.registry import PROJECT_ROOT
from killtest.harness.tool_envs import cache_root


def from_root(line: str, *roots: str | None) -> str:
    """`line` with each checkout path of `roots` (the one it was measured in) and this checkout's left out, and
    the home folder of an assignment (`PATH=/root/.cache/...`) written `~`."""
    for root in dict.fromkeys(filter(None, (*roots, PROJECT_ROOT))):
        line = line.replace(root.rstrip(os.sep) + os.sep, "")
    home = os.path.expanduser("~").rstrip(os.sep)
    if home:  # after `=` or `:` only: where the shell expands `~` in an assignment word
        line = re.sub(rf"(?<=[=:]){re.escape(home)}(?={re.escape(os.sep)})", "~", line)
    envs = os.path.dirname(cache_root())  # ~/.cache/killtest: a path in a tool env, wherever it stands
    if home and envs.startswith(home + os.sep):
        line = re.sub(rf"(?<![\w.~/-]){re.escape(envs)}(?={re.escape(os.sep)})", "~" + envs[len(home):], line)
    return line


def inside(path: str, *roots: str | None) -> bool:
    """Whether `path` lies in one of `roots` or in this checkout: a page written there is read from its root."""
    path = os.path.abspath(path)
    return any(path.startswith(os.path.abspath(root).rstrip(os.sep) + os.sep)
               for root in filter(None, (*roots, PROJECT_ROOT)))


def for_page(line: str, page: str, *roots: str | None) -> str:
    """`line` as the page at `page` gives it: from the root when the page is inside a checkout, whole otherwise."""
    return from_root(line, *roots) if inside(page, *roots) else line
