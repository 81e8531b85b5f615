#!/bin/sh
# apify-sdk-python-1097 without killtest: the case's actor.py (a Scrapy spider run as an Apify Actor, locally, as
# the SDK's Scrapy guide runs one: ApifyScheduler on the file-system request queue), killed with kill -9 from the
# shell when the shop has answered its 30th request (killtest's `r30`), then the same command again to the end.
# Needs `pip install 'apify[scrapy]==4.0.1' scrapy==2.19.0 crawlee==1.10.4` (that venv's bin first on PATH, as
# `python`) and a POSIX shell; the shop is scrapers/cases/repro_shop.py (200 products, 20 a page).
#   sh repro.sh [KILL_AT]        (default 30)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
KILL_AT=${1:-30}
PORT=${PORT:-8768}
WORK=$(mktemp -d)
trap 'kill "$SHOP" 2>/dev/null; rm -rf "$WORK"' EXIT
python "$HERE/../../repro_shop.py" "$PORT" "$WORK/served" 200 20 & SHOP=$!
sleep 1
python -c 'import importlib.metadata as m; print(*(f"{p} {m.version(p)}" for p in ("apify", "scrapy", "crawlee")), sep=", ")'
# The case's settings: the Actor's storage kept across starts (the SDK purges it on start by default).
export APIFY_LOCAL_STORAGE_DIR="$WORK/storage" APIFY_PURGE_ON_START=false
served() { n=$(cat "$WORK/served" 2>/dev/null); echo "${n:-0}"; }
queue() {  # the request queue's own counters, as the SDK's storage keeps them
  python - "$WORK/storage/request_queues/default/__metadata__.json" <<'PY'
import json, sys
meta = json.load(open(sys.argv[1]))
print("request queue:", ", ".join(f"{k} {meta[k]}" for k in ("total_request_count", "handled_request_count",
                                                              "pending_request_count") if k in meta))
PY
}
echo "--- start 1, killed with kill -9 when the shop has answered request $KILL_AT"
setsid python "$HERE/../actor.py" "http://127.0.0.1:$PORT" >"$WORK/start1.log" 2>&1 & START=$!
while [ "$(served)" -lt "$KILL_AT" ]; do sleep 0.005; done
kill -9 -"$START"
wait "$START" 2>/dev/null; echo "start 1 exit status: $? (137 = SIGKILL)"
echo "the shop had answered $(served) requests; dataset items: $(ls "$WORK/storage/datasets/default" | grep -vc __metadata__)"
queue
echo "--- start 2, the same command, to the end"
BEFORE=$(served)
python "$HERE/../actor.py" "http://127.0.0.1:$PORT" >"$WORK/start2.log" 2>&1; echo "start 2 exit status: $?"
echo "the shop answered $(( $(served) - BEFORE )) requests of start 2"
grep -E "ERROR|Traceback|WARNING" "$WORK/start2.log" | head -5
queue
echo "--- what the dataset holds"
python - "$WORK/storage/datasets/default" <<'PY'
import json, os, sys
folder = sys.argv[1]
skus = [json.load(open(os.path.join(folder, f)))["sku"] for f in os.listdir(folder) if not f.startswith("__")]
print(f"items {len(skus)}, distinct products {len(set(skus))} of 200, lost {200 - len(set(skus))}")
PY
