#!/bin/sh
# scrapy-4106 without killtest: Scrapy's own JOBDIR resume, a SIGKILL at the shop's 250th request, then the
# same command again to the end. Needs only Scrapy (`pip install scrapy==2.19.0`, on PATH as `python`)
# and a POSIX shell; the shop is scrapers/cases/repro_shop.py, the spider scrapy-7094's plain spider.py.
#   sh repro.sh [KILL_AT]        (default 250)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SPIDER="$HERE/../../scrapy-7094/spider.py"
KILL_AT=${1:-250}
PORT=8765
WORK=$(mktemp -d)
trap 'kill "$SHOP" 2>/dev/null; rm -rf "$WORK"' EXIT
python "$HERE/../../repro_shop.py" "$PORT" "$WORK/served" & SHOP=$!
sleep 1
python -c 'import scrapy; print("scrapy", scrapy.__version__)'
crawl() {  # the documented resume: the same command, the same JOBDIR; LOG_LEVEL=INFO for Scrapy's closing stats
  python -m scrapy runspider "$SPIDER" -a base="http://127.0.0.1:$PORT" -s JOBDIR="$WORK/job" \
    -s LOG_LEVEL=INFO -o "$WORK/items.jsonl:jsonlines" "$@"
}
echo "--- start 1, killed with SIGKILL at the shop's request $KILL_AT"
# setsid: the crawler leads a process group of its own, killed whole as killtest kills a start
setsid python -m scrapy runspider "$SPIDER" -a base="http://127.0.0.1:$PORT" -s JOBDIR="$WORK/job" \
  -o "$WORK/items.jsonl:jsonlines" 2>"$WORK/start1.log" & START=$!
served() { n=$(cat "$WORK/served" 2>/dev/null); echo "${n:-0}"; }
while [ "$(served)" -lt "$KILL_AT" ]; do sleep 0.005; done
kill -9 -"$START"
wait "$START"; echo "start 1 exit status: $? (137 = SIGKILL)"
echo "the shop had answered $(served) requests; items in the feed: $(wc -l < "$WORK/items.jsonl")"
echo "job directory after the kill:"; (cd "$WORK/job" && ls -l requests.seen && ls requests.queue 2>/dev/null | head -5)
echo "--- start 2, the same command, to the end"
crawl 2>"$WORK/start2.log"; echo "start 2 exit status: $?"
grep -E "'(dupefilter/filtered|scheduler/enqueued|scheduler/dequeued|item_scraped_count|finish_reason|downloader/request_count)'" "$WORK/start2.log" | sed 's/^ */    /'
echo "--- what the feed holds"
python - "$WORK/items.jsonl" <<'PY'
import json, sys
skus = {json.loads(line)["sku"] for line in open(sys.argv[1]) if line.strip()}
print(f"rows {sum(1 for line in open(sys.argv[1]) if line.strip())}, distinct products {len(skus)} of 500, lost {500 - len(skus)}")
PY
