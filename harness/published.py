"""The published kill test of *Designing an idempotent scraper: restarting without duplicates* (멱등성 스크레이퍼
설계: 중복 없이 재시작하기, by Shifter; its section "열 번 죽여보기"): the one place its figures live."""

from __future__ import annotations

from dataclasses import dataclass

# Experiment set-up as the article ran it.
PRODUCTS = 500
LISTING_PAGES = 25
FULL_CRAWL_REQUESTS = 525  # 25 listing pages + 500 products
KILLS_PER_RUN = 10
RUNS_PER_DESIGN = 5
KILL_DELAY_S = (0.2, 1.0)  # uniform, after each start
LEASE_S = 3.0


@dataclass(frozen=True)
class PublishedRun:
    """One row of the article's table."""

    run: int
    naive_rows: int
    naive_requests: int
    idempotent_rows: int
    idempotent_requests: int


PUBLISHED_RUNS = (
    PublishedRun(1, 2165, 2283, 500, 525),
    PublishedRun(2, 1875, 1977, 500, 526),
    PublishedRun(3, 1862, 1967, 500, 526),
    PublishedRun(4, 1455, 1538, 500, 526),
    PublishedRun(5, 1286, 1361, 500, 528),
)

# Wall-time ranges over the five runs, in seconds.
PUBLISHED_WALL_S = {"naive": (9.2, 10.8), "idempotent": (6.8, 8.3)}

# The pace of the article's site, in requests per second. The naive design's last start crawls the
# whole site after ten kills: its wall time 9.2-10.8 s less ten kill delays (0.6 s on average, 6 s)
# leaves 3.2-4.8 s for 525 requests, 110-165 requests/s. The fixture site serves at the middle of
# that band by default, so the crawl outlives the ten kills as it did in the article, whatever the
# machine's own speed (unpaced, one machine here served 540 requests/s and finished before most kills).
ARTICLE_PACE_RPS = 140.0

# The naive design's rows per product: 1,286/500 to 2,165/500, quoted by the article as 2.6 to 4.3.
PUBLISHED_NAIVE_ROWS_PER_PRODUCT = (2.6, 4.3)


def published_run(run: int) -> PublishedRun | None:
    """The article's row for run `run` (1-based), or None past the fifth."""
    return PUBLISHED_RUNS[run - 1] if 1 <= run <= len(PUBLISHED_RUNS) else None
