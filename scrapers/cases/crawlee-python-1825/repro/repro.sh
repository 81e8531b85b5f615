#!/bin/sh
# crawlee-python-1825 without killtest: the case's crawler.py (a ParselCrawler on Crawlee's file-system storage),
# SIGKILLed in the first product request's mark_request_as_handled once the queue's state has been persisted
# with it in progress (kill_at_handled.py, the first start only), then the same command again, given 30 s.
# Needs `pip install 'crawlee[parsel]==1.6.1'` (that venv's bin first on PATH, as `python`) and a POSIX shell;
# the shop is scrapers/cases/repro_shop.py (100 products, 20 a page).
#   sh repro.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
PORT=${PORT:-8769}
WORK=$(mktemp -d)
trap 'kill "$SHOP" 2>/dev/null; rm -rf "$WORK"' EXIT
python "$HERE/../../repro_shop.py" "$PORT" "$WORK/served" 100 20 & SHOP=$!
sleep 1
python -c 'import importlib.metadata as m; print("crawlee", m.version("crawlee"))'
# The case's settings (its design.toml says why): the storage kept across starts, the queue's state persisted
# every 200 ms (60 s by default), and the autoscaled pool not held back by the shared machine's load.
export CRAWLEE_STORAGE_DIR="$WORK/storage" CRAWLEE_PURGE_ON_START=false CRAWLEE_PERSIST_STATE_INTERVAL_MILLIS=200 \
  CRAWLEE_MAX_USED_CPU_RATIO=1.0 CRAWLEE_MAX_EVENT_LOOP_DELAY_MILLIS=1000
served() { n=$(cat "$WORK/served" 2>/dev/null); echo "${n:-0}"; }
queue() {  # the request queue's persisted state and counters, as Crawlee keeps them
  python - "$WORK/storage" <<'PY'
import glob, json, os, sys
meta = json.load(open(os.path.join(sys.argv[1], "request_queues", "default", "__metadata__.json")))
print("request queue:", ", ".join(f"{k} {meta[k]}" for k in ("total_request_count", "handled_request_count",
                                                              "pending_request_count")))
for path in sorted(glob.glob(os.path.join(sys.argv[1], "key_value_stores", "*", "__RQ_STATE_*"))):
    if "metadata" not in path:
        keys = sorted(json.load(open(path)).get("in_progress_requests", []), key=lambda k: (len(k), k))
        if keys:
            print(f"persisted in_progress_requests ({len(keys)}):", ", ".join(k.split("/", 3)[-1] for k in keys))
PY
}
echo "--- start 1, SIGKILLed in mark_request_as_handled of the first product request"
python "$HERE/kill_at_handled.py" "http://127.0.0.1:$PORT" >"$WORK/start1.log" 2>&1
echo "start 1 exit status: $? (137 = SIGKILL)"; grep kill_at_handled "$WORK/start1.log"
queue
echo "--- start 2, the same command without the patch, given 30 s"
BEFORE=$(served)
timeout 30 python "$HERE/../crawler.py" "http://127.0.0.1:$PORT" >"$WORK/start2.log" 2>&1
echo "start 2 exit status: $? (124 = still running when timeout stopped it); the shop answered $(( $(served) - BEFORE )) of its requests"
grep -E "ERROR|Traceback|WARN" "$WORK/start2.log" | head -5
queue
echo "--- what the dataset holds"
python - "$WORK/storage/datasets/default" <<'PY'
import json, os, sys
folder = sys.argv[1]
skus = [json.load(open(os.path.join(folder, f)))["sku"] for f in os.listdir(folder) if not f.startswith("__")]
missing = sorted({f"SKU-{10000 + i}" for i in range(100)} - set(skus))
print(f"items {len(skus)}, distinct products {len(set(skus))} of 100, lost {len(missing)}"
      + (f": {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}" if missing else ""))
PY
