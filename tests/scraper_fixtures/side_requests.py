"""A crawler that asks for what a browser asks for besides its pages, as a browser would say it: the site's icon
after every page, and each product's image with `Sec-Fetch-Dest: image`; its pages with no such header, as an
HTTP client asks. It resumes from its output, so a killed start loses nothing.

    python3 side_requests.py --base URL --out records.jsonl
"""

import argparse
import json
import os
import re
import time
import urllib.error
import urllib.request

parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()


def get(path, **headers):
    try:
        with urllib.request.urlopen(urllib.request.Request(args.base + path, headers=headers)) as answer:
            return answer.read().decode(errors="replace")  # an image is bytes
    except urllib.error.HTTPError:
        return ""  # the shop has no icon: a 404, as a browser meets it


stored = set()
if os.path.exists(args.out):
    with open(args.out, encoding="utf-8") as lines:
        stored = {json.loads(line)["path"] for line in lines if line.endswith("\n")}
listing = "/list/0"
while listing:
    page = get(listing)
    get("/favicon.ico", **{"Sec-Fetch-Dest": "image"})
    for path in re.findall(r'href="(/product/\d+)"', page):
        if path in stored:
            continue
        product = get(path)
        get("/favicon.ico", **{"Sec-Fetch-Dest": "image"})
        get(re.search(r'src="([^"]+)"', product)[1], **{"Sec-Fetch-Dest": "image"})
        record = {"path": path, "sku": re.search(r'class="sku">([^<]+)', product)[1],
                  "price": re.search(r'class="price">([^<]+)', product)[1],
                  "name": re.search(r'class="name">([^<]+)', product)[1], "scraped_at": time.time()}
        with open(args.out, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
    following = re.search(r'class="next" href="([^"]+)"', page)
    listing = following[1] if following else None
