#!/bin/sh
# crawlee-node-1736 without killtest: the same crawler, kill and restart as crawlee-node-2085's framework-only
# reproduction (../../crawlee-node-2085/repro/repro.sh: a SIGKILL in the write of the first product request's
# new file, then the same command again), on Crawlee 3.2.2: every @crawlee/* package pinned at 3.2.2 (crawlee@3.2.2
# alone resolves them to the newest 3.x), NODE_PATH pointing at their node_modules.
#   sh repro.sh
exec sh "$(cd "$(dirname "$0")" && pwd)/../../crawlee-node-2085/repro/repro.sh" "$@"
