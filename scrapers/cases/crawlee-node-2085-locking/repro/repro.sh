#!/bin/sh
# crawlee-node-2085-locking without killtest: Crawlee 3.18.1's CheerioCrawler (the case's crawler.cjs) on its
# default file-system storage, killed with SIGKILL in the write that records a product request's lock in its
# file (kill-at-lock-write.cjs, preloaded in the first start only), then the same command again to the end.
# Needs Node.js with crawlee@3.18.1 installed (NODE_PATH pointing at its node_modules) and python3 for the
# shop (scrapers/cases/repro_shop.py). The second start waits out the killed start's request locks first
# (how long depends on which requests the killed start had locked: none but the emptied one's, here).
#   sh repro.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
CRAWLER="$HERE/../../crawlee-node-2085/crawler.cjs"
PORT=8766
WORK=$(mktemp -d)
trap 'kill "$SHOP" 2>/dev/null; rm -rf "$WORK"' EXIT
python3 "$HERE/../../repro_shop.py" "$PORT" "$WORK/served" 10 5 & SHOP=$!
sleep 1
node -e 'console.log("crawlee", require("crawlee/package.json").version, "on Node.js", process.version)'
# The case's settings: keep the storage across starts (Crawlee purges it on start by default).
export CRAWLEE_STORAGE_DIR="$WORK/storage" CRAWLEE_PURGE_ON_START=false
echo "--- start 1, SIGKILLed in a product request's lock write"
node --require "$HERE/kill-at-lock-write.cjs" "$CRAWLER" "http://127.0.0.1:$PORT" >"$WORK/start1.log" 2>&1
echo "start 1 exit status: $? (137 = SIGKILL)"; grep kill-at-lock-write "$WORK/start1.log" | sed "s|$WORK/||"
echo "request files left empty: $(find "$WORK/storage/request_queues" -name '*.json' -empty | wc -l)"
echo "--- start 2, the same command without the preload, to the end"
START=$(date +%s)
node "$CRAWLER" "http://127.0.0.1:$PORT" >"$WORK/start2.log" 2>&1
echo "start 2 exit status: $? after $(( $(date +%s) - START )) s"
# Crawlee's own lines (its colours stripped): the warning about the emptied file, the closing counters.
tr -d '\033' <"$WORK/start2.log" | sed 's/\[[0-9;]*m//g' | grep -E "WARN|ERROR|Final request statistics|Finished! Total" \
  | sed "s|$WORK/||" | cut -c1-240
echo "--- what the dataset holds"
python3 - "$WORK/storage/datasets/default" <<'PY'
import json, os, sys
skus = [json.load(open(os.path.join(sys.argv[1], f)))["sku"] for f in sorted(os.listdir(sys.argv[1])) if f.endswith(".json")]
missing = sorted({f"SKU-{10000 + i}" for i in range(10)} - set(skus))
print(f"items {len(skus)}, distinct products {len(set(skus))} of 10, lost {len(missing)}"
      + (f": {', '.join(missing)}" if missing else ""))
PY
