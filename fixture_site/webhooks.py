"""The site's webhook receiver: every delivery kept as it arrived, duplicates included."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Delivery:
    t: float  # time.monotonic() of arrival
    key: str | None  # the Idempotency-Key header, when the sender gave one
    payload: dict


class WebhookLog:
    """Thread-safe; a receiver that deduplicates would keep the first delivery of each key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._deliveries: list[Delivery] = []

    def record(self, key: str | None, payload: dict) -> None:
        with self._lock:
            self._deliveries.append(Delivery(time.monotonic(), key, payload))

    def snapshot(self) -> list[Delivery]:
        with self._lock:
            return list(self._deliveries)

    def clear(self) -> None:
        with self._lock:
            self._deliveries.clear()
