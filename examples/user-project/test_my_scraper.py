import pathlib

import pytest

SPEC = pathlib.Path(__file__).with_name("design.toml")


@pytest.mark.killtest(does_not_promise=[])  # what my scraper promises: everything
def test_my_scraper_survives_sigkill(killtest):
    killtest.run(SPEC, runs=2, kills=3, listing_pages=10).assert_passed()
    killtest.explore(SPEC, only="r2,r9,r30").assert_passed()
