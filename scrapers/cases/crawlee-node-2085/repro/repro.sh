#!/bin/sh
# crawlee-node-2085 without killtest: Crawlee's CheerioCrawler (the case's crawler.cjs) on its default
# file-system storage, killed with SIGKILL in the write of the first product request's new file
# (kill-at-request-write.cjs, preloaded in the first start only), then the same command again.
# Needs Node.js with crawlee installed (NODE_PATH pointing at its node_modules: crawlee@3.5.7 for this case,
# every @crawlee/* package at 3.2.2 for crawlee-node-1736) and python3 for the shop (scrapers/cases/repro_shop.py).
# The second start is given 60 s (`timeout 60`); an exit status of 124 would mean it was still running.
#   sh repro.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
CRAWLER="$HERE/../crawler.cjs"
PORT=${PORT:-8767}
WORK=$(mktemp -d)
trap 'kill "$SHOP" 2>/dev/null; rm -rf "$WORK"' EXIT
python3 "$HERE/../../repro_shop.py" "$PORT" "$WORK/served" 10 5 & SHOP=$!
sleep 1
node -e 'console.log("crawlee", require("crawlee/package.json").version,
  "(@crawlee/memory-storage", require("@crawlee/memory-storage/package.json").version + ") on Node.js", process.version)'
# The case's settings: keep the storage across starts (Crawlee purges it on start by default).
export CRAWLEE_STORAGE_DIR="$WORK/storage" CRAWLEE_PURGE_ON_START=false
echo "--- start 1, SIGKILLed in the write of a product request's new file"
node --require "$HERE/kill-at-request-write.cjs" "$CRAWLER" "http://127.0.0.1:$PORT" >"$WORK/start1.log" 2>&1
echo "start 1 exit status: $? (137 = SIGKILL)"; grep kill-at-request-write "$WORK/start1.log" | sed "s|$WORK/||"
echo "request files left empty: $(find "$WORK/storage/request_queues" -name '*.json' -empty | wc -l)"
echo "--- start 2, the same command without the preload"
START=$(date +%s)
timeout 60 node "$CRAWLER" "http://127.0.0.1:$PORT" >"$WORK/start2.log" 2>&1
echo "start 2 exit status: $? after $(( $(date +%s) - START )) s"
# Crawlee's own lines (colours stripped): the error and the first frames of its stack, or the closing counters.
tr -d '\033' <"$WORK/start2.log" | sed 's/\[[0-9;]*m//g' \
  | grep -E -A3 "^(WARN|ERROR|SyntaxError)|Final request statistics|Finished! Total" | grep -v '^--$' \
  | sed "s|$WORK/||; s|/[^ ]*/node_modules/|node_modules/|" | cut -c1-200 | head -14
timeout 60 node "$CRAWLER" "http://127.0.0.1:$PORT" >"$WORK/start3.log" 2>&1
echo "start 3, the same command again: exit status $?"
echo "--- what the dataset holds"
python3 - "$WORK/storage/datasets/default" <<'PY'
import json, os, sys
folder = sys.argv[1]
names = sorted(f for f in os.listdir(folder) if f.endswith(".json") and not f.startswith("__")) if os.path.isdir(folder) else []
skus = [json.load(open(os.path.join(folder, f)))["sku"] for f in names]
missing = sorted({f"SKU-{10000 + i}" for i in range(10)} - set(skus))
print(f"items {len(skus)}, distinct products {len(set(skus))} of 10, lost {len(missing)}"
      + (f": {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}" if missing else ""))
PY
