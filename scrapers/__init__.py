"""Scraper designs under test. Each is a program: `python -m scrapers.NAME --base URL --db PATH`."""
