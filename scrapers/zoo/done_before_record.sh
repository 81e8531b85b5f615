#!/bin/sh
# Zoo: progress committed before the result, in a shell script with curl and the sqlite3 CLI.
#
#   sh done_before_record.sh BASE_URL DB
#
# One sqlite3 process keeps the store; the script pipes its statements to it, one autocommitted
# statement at a time. The mistake: each product page is marked done, then its record is saved in
# a separate statement. A kill between the two loses the record for good: the next start reads the
# done marks and never fetches that page again. Timed kills seldom land in that gap; a store-write
# point (w<n>) lands there every time.
set -eu
base=$1
db=$2

sqlite3 "$db" "CREATE TABLE IF NOT EXISTS done (path TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS records (sku TEXT PRIMARY KEY, path TEXT, name TEXT, price TEXT, scraped_at REAL);"
already=$(sqlite3 "$db" "SELECT path FROM done")  # what earlier starts finished

field() {  # the text of <... class="NAME">TEXT< in the page on stdin
    sed -n "s/.*class=\"$1\">\([^<]*\)<.*/\1/p" | head -n 1
}
quoted() {  # a SQL string literal
    printf "'%s'" "$(printf '%s' "$1" | sed "s/'/''/g")"
}

crawl() {
    listing=/list/0
    while [ -n "$listing" ]; do
        html=$(curl -sf "$base$listing")
        for path in $(printf '%s\n' "$html" | grep -o 'href="/product/[0-9]*"' | cut -d'"' -f2); do
            if printf '%s\n' "$already" | grep -qx "$path"; then
                continue
            fi
            page=$(curl -sf "$base$path")
            sku=$(printf '%s\n' "$page" | field sku)
            name=$(printf '%s\n' "$page" | field name)
            price=$(printf '%s\n' "$page" | field price)
            echo "INSERT OR IGNORE INTO done VALUES ($(quoted "$path"));"  # the mistake: progress first
            echo "INSERT OR REPLACE INTO records VALUES ($(quoted "$sku"), $(quoted "$path"), $(quoted "$name"),"\
                 "$(quoted "$price"), $(date +%s.%N));"
        done
        listing=$(printf '%s\n' "$html" | grep -o 'href="/list/[0-9]*"' | head -n 1 | cut -d'"' -f2 || true)
    done
}

crawl | sqlite3 "$db"
