"""My project's own scrapers. The package is called `scrapers` on purpose: killtest installs as
killtest.harness, killtest.scrapers and killtest.fixture_site, so neither package shadows the other."""
