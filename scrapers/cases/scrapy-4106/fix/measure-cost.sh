#!/bin/sh
# The patch's cost on a crawl that is not killed: the case's spider (scrapy-7094's spider.py) with a fresh JOBDIR
# against the 500-product repro shop (scrapers/cases/repro_shop.py, about 140 requests a second), to the end;
# wall time and the crawler's CPU time (user + sys), 3 runs each, in the order before-after, after-before,
# before-after. BEFORE and AFTER are two virtualenvs: scrapy==2.19.0, and the same with restart-unclean-job.patch
# applied (cd <venv>/lib/python3.*/site-packages && patch -p1 < restart-unclean-job.patch).
#   sh measure-cost.sh BEFORE_VENV AFTER_VENV
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SPIDER="$HERE/../../scrapy-7094/spider.py"
for i in 1 2 3; do
  ORDER="$1 $2"; [ "$i" = 2 ] && ORDER="$2 $1"
  for v in $ORDER; do
    W=$(mktemp -d)
    PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    python3 "$HERE/../../repro_shop.py" "$PORT" "$W/served" & SHOP=$!
    sleep 1
    T0=$(date +%s.%N)
    # the crawler under a parent that writes its CPU time to descriptor 3
    "$v/bin/python" -c 'import os, resource, subprocess, sys
rc = subprocess.call(sys.argv[1:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
os.write(3, f"{r.ru_utime + r.ru_stime:.2f}".encode())
sys.exit(rc)' "$v/bin/python" -m scrapy runspider "$SPIDER" -a base="http://127.0.0.1:$PORT" -s JOBDIR="$W/job" \
      -s LOG_LEVEL=INFO -o "$W/items.jsonl:jsonlines" 2>"$W/log" 3>"$W/cpu"
    RC=$?; T1=$(date +%s.%N)
    echo "$(basename "$v") run $i: exit $RC, wall $(python3 -c "print(f'{$T1 - $T0:.2f}')") s, cpu $(cat "$W/cpu") s," \
      "load $(cut -d' ' -f1 /proc/loadavg), rows $(wc -l <"$W/items.jsonl"), requests $(cat "$W/served")," \
      "job dir after: $(ls "$W/job" | tr '\n' ' ')"
    kill "$SHOP"; rm -rf "$W"
  done
done
