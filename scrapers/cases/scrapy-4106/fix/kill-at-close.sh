#!/bin/sh
# A kill in the close sequence, without killtest: the case's spider (scrapy-7094's spider.py) with a fresh JOBDIR
# against the 500-product repro shop runs to the end and is SIGKILLed in its spider_closed handlers, before the
# feed exporter closes the feed (kill_at_close.py, enabled in the first start only), then the same command again
# to the end. VENV holds scrapy==2.19.0, as published or with restart-unclean-job.patch applied.
#   sh kill-at-close.sh VENV
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SPIDER="$HERE/../../scrapy-7094/spider.py"
PY="$1/bin/python"
W=$(mktemp -d)
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 "$HERE/../../repro_shop.py" "$PORT" "$W/served" & SHOP=$!
trap 'kill "$SHOP" 2>/dev/null; rm -rf "$W"' EXIT
sleep 1
PYTHONPATH="$HERE" "$PY" -m scrapy runspider "$SPIDER" -a base="http://127.0.0.1:$PORT" -s JOBDIR="$W/job" \
  -o "$W/items.jsonl:jsonlines" -s 'EXTENSIONS={"kill_at_close.KillAtSpiderClosed": -1}' 2>"$W/start1.log"
echo "start 1 exit status $? (137 = SIGKILL, in its spider_closed handlers); the shop answered $(cat "$W/served");" \
  "rows in the feed $(wc -l < "$W/items.jsonl"); job dir: $(ls "$W/job" | tr '\n' ' ')"
"$PY" -m scrapy runspider "$SPIDER" -a base="http://127.0.0.1:$PORT" -s JOBDIR="$W/job" -s LOG_LEVEL=INFO \
  -o "$W/items.jsonl:jsonlines" 2>"$W/start2.log"
echo "start 2 exit status $?"
grep -E "WARNING|'downloader/request_count'" "$W/start2.log" | sed "s|$W/||"
"$PY" - "$W/items.jsonl" <<'PYEOF'
import json, sys
skus = [json.loads(line)["sku"] for line in open(sys.argv[1]) if line.strip()]
print(f"rows {len(skus)}, distinct products {len(set(skus))} of 500, lost {500 - len(set(skus))}")
PYEOF
