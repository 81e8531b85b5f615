"""A half-fenced design, for the aimed pause's tests (issue 35): the idempotent design (killtest.scrapers.idempotent)
with its record upserted in a transaction of its own, unfenced, and its done mark fenced after it. Under SIGKILL
it is clean (the upsert is idempotent: a page done again writes the same row); a worker paused past its lease
wakes, upserts the old price over the one the worker that took its page over stored, and only then finds its
lease gone (LeaseLost: its done mark is refused, its record write is not). A plain program, run as a command.

    python3 half_fenced.py --base http://127.0.0.1:8000 --db store.sqlite --lease 1 --crawl 1
"""
import sys

from killtest.scrapers import idempotent


def complete(db, crawl, path, discovered=(), record=None):
    """The record first, in its own transaction (unfenced), then the page's fenced done mark."""
    if record is not None:
        db.execute("BEGIN IMMEDIATE")
        try:
            idempotent.save_record(db, path, record)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    db.execute("BEGIN IMMEDIATE")
    try:
        idempotent.discover(db, crawl, list(discovered))
        idempotent.mark_done(db, crawl, path)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


if __name__ == "__main__":
    idempotent.complete = complete
    idempotent.main(sys.argv[1:])
