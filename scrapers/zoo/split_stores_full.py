"""The fixed twin of scrapers/zoo/split_stores.py: the same two stores, the records' with synchronous=FULL.

WAL with FULL fsyncs the records' log at every commit, before the page is marked done in the frontier,
so a power cut after a done mark finds its record durable: the cut costs a refetch, never a record.
"""

from __future__ import annotations

from killtest.scrapers.zoo import split_stores


def main(argv: list[str] | None = None) -> None:
    split_stores.SYNCHRONOUS = "FULL"
    split_stores.main(argv)


if __name__ == "__main__":
    main()
