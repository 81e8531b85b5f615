"""What a case env really holds: kept as the name the cases' code and its callers import.

The reading itself (every package as `name==version`, the pins' direct dependencies, installed.json)
is harness/env_contents.py's, on the floor, shared by every kind of env (harness/tool_envs.py).
"""

from __future__ import annotations

from killtest.harness.env_contents import FILE, installed

__all__ = ["FILE", "installed"]
