"""A design that fetches one page and then never finishes: the runner must call it a liveness failure."""

import sys
import time
import urllib.request

base = sys.argv[sys.argv.index("--base") + 1]
urllib.request.urlopen(base + "/list/0").read()
while True:
    time.sleep(1)
