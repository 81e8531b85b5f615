"""Recorded sites: a user's own site, recorded through a proxy and replayed to the scraper without the internet.

The recording (recorded_site.py: a WARC and its index) and its replay (replay.py, with the proxy that
serves it in replay_proxy.py); the redaction of credentials before anything is written (redaction.py)
and the scan that names what is left (secret_scan.py); and a second local site of another shape than
the shop, to record and replay in tests (second_site.py). The shop itself is the package above.
"""
