"""Private database and queue servers the harness starts for itself: loopback only, temporary, never shared."""
