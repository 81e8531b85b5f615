"""killtest: SIGKILL scrapers for real, on a seeded schedule, and count what they leave behind."""
