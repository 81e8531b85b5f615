"""The idempotent design with its side effects made idempotent too (seeds/000, "beyond the database").

- Images are named by the hash of their bytes and written through a temporary file renamed into
  place: a repeated download overwrites the same file, a killed one leaves a temporary file that the
  next start removes.
- A webhook announces each new or changed record. Its idempotency key is derived from the record ID
  and the content hash, and the announcement is queued in an outbox table in the same transaction as
  the record: a kill before the delivery means a later start sends it, a kill after it but before the
  outbox row is marked sent means it is sent again under the same key, which the receiver drops.
- The product count is recomputed from the records in every transaction that changes them, never
  incremented.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import sqlite3

import requests

from killtest.scrapers import idempotent
from killtest.scrapers.common import (TransientPageError, emit, exchange, immediate_transaction, parse_args, parse_product,
                             with_retries)

IMAGE = re.compile(r'class="photo" src="([^"]+)"')
SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (key TEXT PRIMARY KEY, payload TEXT NOT NULL, sent INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS stats (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""
PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"  # a PNG file ends with this chunk; a cut one does not


class Effects:
    """Where the side effects go: the image directory and the site's webhook receiver."""

    def __init__(self, base: str, images: str, session: requests.Session) -> None:
        self.base, self.images, self.session = base, images, session


EFFECTS: Effects | None = None


def save_image(directory: str, data: bytes) -> str:
    """Store `data` under the hash of its bytes; a file already there is the same picture."""
    name = hashlib.sha256(data).hexdigest() + ".png"
    final = os.path.join(directory, name)
    if not os.path.exists(final):
        temporary = f"{final}.{os.getpid()}.tmp"
        with open(temporary, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, final)
    return name


def remove_dead_downloads(directory: str) -> None:
    """Temporary files of starts that are gone: a kill between the write and the rename left them."""
    for temporary in glob.glob(os.path.join(directory, "*.tmp")):
        writer = temporary.rsplit(".", 2)[-2]  # NAME.png.PID.tmp
        if not (writer.isdigit() and _alive(int(writer))):
            os.remove(temporary)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recount(db: sqlite3.Connection) -> None:
    db.execute("INSERT INTO stats (name, value) VALUES ('products', (SELECT COUNT(*) FROM records))"
               " ON CONFLICT (name) DO UPDATE SET value = excluded.value")


def complete(db: sqlite3.Connection, crawl: int, path: str, discovered: list[str] = (),
             record: dict | None = None) -> None:
    """The record, its announcement in the outbox, the recount and the done mark: one transaction."""
    with immediate_transaction(db):
        idempotent.discover(db, crawl, list(discovered))
        if record is not None:
            row = idempotent.record_row(path, record)
            before = db.execute("SELECT content_hash FROM records WHERE record_id = ?", (row[0],)).fetchone()
            db.execute(idempotent.UPSERT_RECORD, row)
            if before is None or before[0] != row[2]:  # new, or a new version: announce it
                key = hashlib.sha256(f"{row[0]}:{row[2]}".encode()).hexdigest()
                db.execute("INSERT OR IGNORE INTO outbox (key, payload) VALUES (?, ?)",
                           (key, json.dumps({**record, "record_id": row[0], "version": row[2]})))
            recount(db)
        idempotent.mark_done(db, crawl, path)
    deliver(db)


def deliver(db: sqlite3.Connection) -> None:
    """Send every queued announcement not yet acknowledged, each with its idempotency key."""
    for key, payload in db.execute("SELECT key, payload FROM outbox WHERE sent = 0 ORDER BY rowid").fetchall():
        try:
            with_retries(lambda: exchange(EFFECTS.session, "POST", EFFECTS.base + "/webhook", data=payload,
                                          headers={"Idempotency-Key": key, "Content-Type": "application/json"}),
                         "/webhook")
        except (TransientPageError, requests.HTTPError):
            return  # the receiver is down: the outbox keeps them for the next delivery
        db.execute("UPDATE outbox SET sent = 1 WHERE key = ?", (key,))


def product_with_image(html: str) -> dict:
    """The product page's record, with its image downloaded (retried as a page is, a cut file too) and
    named by content."""
    record = parse_product(html)
    source = IMAGE.search(html)
    if source is not None:
        image = with_retries(lambda: exchange(EFFECTS.session, "GET", EFFECTS.base + source.group(1),
                                              whole=lambda r: r.content.endswith(PNG_END)),
                             source.group(1)).content
        record["image"] = save_image(EFFECTS.images, image)
    return record


def forget(db: sqlite3.Connection, crawl: int, path: str) -> None:
    with immediate_transaction(db):
        db.execute("DELETE FROM records WHERE path = ?", (path,))
        recount(db)
        idempotent.mark_done(db, crawl, path)


def sweep(db: sqlite3.Connection, crawl: int) -> int:
    with immediate_transaction(db):
        removed = ORIGINAL_SWEEP(db, crawl)
        recount(db)
    return removed


ORIGINAL_SWEEP = idempotent.sweep


def main(argv: list[str] | None = None) -> None:
    global EFFECTS
    args = parse_args("idempotent-effects", argv, with_lease=True)
    images = os.path.join(os.path.dirname(os.path.abspath(args.db)), "images")
    os.makedirs(images, exist_ok=True)
    remove_dead_downloads(images)
    session = requests.Session()
    EFFECTS = Effects(args.base, images, session)
    db = idempotent.open_store(args.db)
    db.executescript(SCHEMA)
    # The design's own loop and page handling, with these in place of its parser and its transactions.
    idempotent.parse_product, idempotent.complete = product_with_image, complete
    idempotent.forget, idempotent.sweep = forget, sweep
    emit("ready")
    deliver(db)  # what a killed start queued but did not send
    idempotent.crawl_site(db, args.crawl, args.base, session, args.lease)
    deliver(db)
    emit("finished")


if __name__ == "__main__":
    main()
