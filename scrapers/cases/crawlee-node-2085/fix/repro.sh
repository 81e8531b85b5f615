#!/bin/sh
# crawlee-node-2085's empty dataset item without killtest: Crawlee's CheerioCrawler (the case's crawler.cjs) on
# its default file-system storage, killed with SIGKILL in the write of the first product's dataset item
# (kill-at-item-write.cjs, preloaded in the first start only), then the same command again to the end, then the
# dataset read back through Crawlee (Dataset.getData()). Needs Node.js with crawlee installed (NODE_PATH pointing
# at its node_modules: crawlee@3.18.1 or 3.5.8 as published for "before", both run here; the same env with
# dataset-item-atomic.dist.patch, or -3.5.8.dist.patch before 3.7.0, applied for "after") and python3 for the shop
# (scrapers/cases/repro_shop.py). On 3.18.1 the second start first waits out the lock the killed start held on
# the first product's request (361 s here: locked for 180 s, prolonged once while it was handled).
#   sh repro.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
CRAWLER="$HERE/../crawler.cjs"
# A free port, so that no other server answers the crawler.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
WORK=$(mktemp -d)
trap 'kill "$SHOP" 2>/dev/null; rm -rf "$WORK"' EXIT
python3 "$HERE/../../repro_shop.py" "$PORT" "$WORK/served" 10 5 & SHOP=$!
sleep 1
node -e 'console.log("crawlee", require("crawlee/package.json").version, "on Node.js", process.version)'
# The case's settings: keep the storage across starts (Crawlee purges it on start by default).
export CRAWLEE_STORAGE_DIR="$WORK/storage" CRAWLEE_PURGE_ON_START=false
echo "--- start 1, SIGKILLed in the first write of a product's dataset item"
node --require "$HERE/kill-at-item-write.cjs" "$CRAWLER" "http://127.0.0.1:$PORT" >"$WORK/start1.log" 2>&1
echo "start 1 exit status: $? (137 = SIGKILL)"; grep kill-at-item-write "$WORK/start1.log" | sed "s|$WORK/||"
echo "dataset item files left empty: $(find "$WORK/storage/datasets" -name '*.json' -empty | wc -l)"
echo "--- start 2, the same command without the preload, to the end"
START=$(date +%s)
node "$CRAWLER" "http://127.0.0.1:$PORT" >"$WORK/start2.log" 2>&1
echo "start 2 exit status: $? after $(( $(date +%s) - START )) s"
# Crawlee's own lines (its colours stripped): warnings, errors, the closing counters.
tr -d '\033' <"$WORK/start2.log" | sed 's/\[[0-9;]*m//g' | grep -E "WARN|ERROR|Final request statistics|Finished! Total" \
  | sed "s|$WORK/||" | cut -c1-240
echo "--- the dataset folder"
echo "item files $(ls "$WORK/storage/datasets/default" | grep -c '^[0-9]*\.json$'), empty $(find "$WORK/storage/datasets/default" -name '*.json' -empty | wc -l)"
echo "--- the dataset read through Crawlee: (await Dataset.open()).getData()"
node -e '
const { Dataset } = require("crawlee");
(async () => {
    const { items, total } = await (await Dataset.open()).getData();
    const skus = new Set(items.map((item) => item.sku));
    const missing = Array.from({ length: 10 }, (_, i) => `SKU-${10000 + i}`).filter((sku) => !skus.has(sku));
    console.log(`getData: total ${total}, items ${items.length}, distinct products ${skus.size} of 10, lost ${missing.length}`
        + (missing.length ? `: ${missing.join(", ")}` : ""));
})().catch((err) => { console.log(`getData threw ${err.name}: ${err.message}`); process.exit(1); });
'
echo "read exit status: $?"
