"""Designs with one classic idempotency bug each; killtest must catch every one."""
