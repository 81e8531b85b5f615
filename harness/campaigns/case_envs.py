"""A case release's environment: kept as the name the cases' code and its callers import.

The envs themselves (built once, cached in ~/.cache/killtest/cases/<hash>, swapped in by one rename)
are harness/tool_envs.py's, on the floor, since the recording proxy's env (running/) and the designs
that name packages (design/) are built the same way; this module is the cases' door to it.
"""

from __future__ import annotations

from killtest.harness.tool_envs import CaseEnv, cache_root, ensure_env, env_hash, interpreter_version

__all__ = ["CaseEnv", "cache_root", "ensure_env", "env_hash", "interpreter_version"]
