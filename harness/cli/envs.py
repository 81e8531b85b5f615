"""`killtest envs`: the envs killtest built and cached (cases, tools, designs), their size, and removing them.

killtest builds the programs it runs at exact pins in envs of their own, on first use (harness/tool_envs.py):
a case's framework release, the recording proxy (mitmproxy), a design's `packages` (the peer designs'
Scrapy and Crawlee). They stay in ~/.cache/killtest/<kind>/<hash> until removed here: `--remove NAME`
(a hash, KIND/HASH, or a kind for all of its envs) or `--remove-all`. A removed env is built again the next
time it is needed. A build killed midway (its folder, no link to it, its builder dead) is listed too, as an
interrupted build, and removed the same way.
"""

from __future__ import annotations

import argparse
import os

from killtest.harness.cli.command import EXIT_PASSED, Command
from killtest.harness.errors import KilltestError
from killtest.harness.running.progress import Progress
from killtest.harness.tool_envs import KINDS, CachedEnv, cache_root, cached_envs, interrupted_builds, remove_env


def size_text(size_bytes: int) -> str:
    return f"{size_bytes / 1e6:.1f} MB" if size_bytes < 1e9 else f"{size_bytes / 1e9:.2f} GB"


def sized(env: CachedEnv) -> str:
    """`123.4 MB`, and how much of it is hard links into uv's cache, which removing the env does not free."""
    shared = f" ({size_text(env.shared_bytes)} of it shared with uv's cache)" if env.shared_bytes else ""
    return size_text(env.size_bytes) + shared


def chosen(envs: list[CachedEnv], names: list[str]) -> list[CachedEnv]:
    """The envs `--remove` names: each NAME a hash, KIND/HASH, or a kind; a NAME matching none is bad input."""
    picked: dict[str, CachedEnv] = {}
    for name in names:
        matching = [e for e in envs if name in (e.name, e.label, e.kind)]
        if not matching:
            known = ", ".join(e.label for e in envs) or "none"
            raise KilltestError(f"--remove {name}: no cached env has that name, kind ({', '.join(KINDS)}) or hash;"
                                f" cached: {known}")
        picked.update((e.label, e) for e in matching)
    return list(picked.values())


class EnvsCommand(Command):
    name = "envs"
    help = "list the envs killtest built on first use (cases, tools, designs) with their size; remove them"

    def run(self, args: argparse.Namespace, progress: Progress) -> int:
        envs = cached_envs() + interrupted_builds()
        names = list(args.remove or ())
        if args.remove_all or names:
            gone = envs if args.remove_all else chosen(envs, names)
            for env in gone:
                remove_env(env)
                pins = _pins(env)
                progress.done(f"removed {env.label} ({sized(env)}, {pins})")
            progress.done(f"removed {len(gone)} env(s), {size_text(sum(e.size_bytes for e in gone))};"
                          " each is built again when next needed")
            return EXIT_PASSED
        folder = os.path.dirname(cache_root())
        if not envs:
            progress.done(f"no cached envs in {folder}")
            return EXIT_PASSED
        for env in envs:
            built = ("never finished" if env.interrupted else f"built in {env.build_s:.0f}s"
                     if env.build_s is not None else "build time not recorded")
            pins = _pins(env)
            progress.done(f"{env.label}  {sized(env):>9}  {built}  {pins}")
        shared = sum(e.shared_bytes for e in envs)
        progress.done(f"{len(envs)} env(s), {size_text(sum(e.size_bytes for e in envs))} in {folder}"
                      + (f" ({size_text(shared)} of it shared with uv's cache: freed once both are removed)"
                         if shared else "") + "; killtest envs --remove NAME|KIND or --remove-all to free them")
        return EXIT_PASSED


def _pins(env: CachedEnv) -> str:
    if env.interrupted:
        return "an interrupted build (its install was killed midway): nothing uses it"
    return " ".join(env.packages) or "pins not recorded"
