#!/bin/sh
# scrapy-7094 without killtest: Scrapy's own JOBDIR resume, a kill -9 when the shop has answered its 30th request
# (killtest's `r30`), then the same command again to the end. Needs only Scrapy (`pip install scrapy==2.14.0`,
# or 2.18.0, on PATH as `python`) and a POSIX shell; the shop is scrapers/cases/repro_shop.py (200 products,
# 20 a page), the spider the case's spider.py.
#   sh repro.sh [KILL_AT]        (default 30)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SPIDER="$HERE/../spider.py"
KILL_AT=${1:-30}
PORT=${PORT:-8770}
WORK=$(mktemp -d)
trap 'kill "$SHOP" 2>/dev/null; rm -rf "$WORK"' EXIT
python "$HERE/../../repro_shop.py" "$PORT" "$WORK/served" 200 20 & SHOP=$!
sleep 1
python -c 'import scrapy; print("scrapy", scrapy.__version__)'
echo "--- start 1, killed with kill -9 when the shop has answered request $KILL_AT"
# setsid: the crawler leads a process group of its own, killed whole as killtest kills a start
setsid python -m scrapy runspider "$SPIDER" -a base="http://127.0.0.1:$PORT" -s JOBDIR="$WORK/job" \
  -o "$WORK/items.jsonl:jsonlines" 2>"$WORK/start1.log" & START=$!
served() { n=$(cat "$WORK/served" 2>/dev/null); echo "${n:-0}"; }
while [ "$(served)" -lt "$KILL_AT" ]; do sleep 0.005; done
kill -9 -"$START"
wait "$START" 2>/dev/null; echo "start 1 exit status: $? (137 = SIGKILL)"
echo "the shop had answered $(served) requests; items in the feed: $(wc -l < "$WORK/items.jsonl")"
echo "job directory after the kill: requests.seen holds $(wc -l < "$WORK/job/requests.seen") fingerprints;" \
  "requests.queue/active.json $(test -e "$WORK/job/requests.queue/active.json" && echo present || echo absent)"
echo "--- start 2, the same command, to the end (LOG_LEVEL=INFO for Scrapy's closing stats)"
BEFORE=$(served)
python -m scrapy runspider "$SPIDER" -a base="http://127.0.0.1:$PORT" -s JOBDIR="$WORK/job" -s LOG_LEVEL=INFO \
  -o "$WORK/items.jsonl:jsonlines" 2>"$WORK/start2.log"
echo "start 2 exit status: $?; the shop answered $(( $(served) - BEFORE )) of its requests"
grep -E "'(dupefilter/filtered|scheduler/enqueued|scheduler/dequeued|item_scraped_count|finish_reason|downloader/request_count)'" "$WORK/start2.log" | sed 's/^ */    /'
echo "--- what the feed holds"
python - "$WORK/items.jsonl" <<'PY'
import json, sys
rows = [json.loads(line)["sku"] for line in open(sys.argv[1]) if line.strip()]
print(f"rows {len(rows)}, distinct products {len(set(rows))} of 200, lost {200 - len(set(rows))}")
PY
