"""Network faults the site injects, in the spirit of Toxiproxy's toxics, chosen per request with a seed.

Which fault the n-th request for a path meets depends only on the seed, the path and n: every
design sees the same faults at the same points of its crawl, and a run replays exactly. Kinds:

- `latency` and `jitter`: every answer waits latency ± jitter seconds;
- `error`: HTTP 503, a server error a client should retry;
- `throttle`: HTTP 429 with `Retry-After: <retry_after>` seconds, which a polite client honours;
- `reset`: the connection is closed with a TCP reset before any answer;
- `truncate`: HTTP 200 with only the first half of the page (its Content-Length says so, as a cut
  cache or proxy would send it): only a client that checks the page is whole notices;
- `timeout`: the site holds the connection `hold` seconds without a byte, then drops it.

A spec is comma-joined `kind=rate` (`error=0.05,throttle=0.03`), with `latency=SECONDS`,
`jitter=SECONDS`, `retry_after=SECONDS`, `hold=SECONDS`, and `only=PREFIX` to limit the faults to
paths that start with PREFIX (`only=/product/`).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field

FAULT_KINDS = ("error", "throttle", "reset", "truncate", "timeout")
SETTINGS = ("latency", "jitter", "retry_after", "hold", "only")
ERROR_STATUS = 503
THROTTLE_STATUS = 429


class ToxicSpecError(ValueError):
    pass


@dataclass(frozen=True)
class Toxics:
    rates: tuple[tuple[str, float], ...] = ()  # (fault kind, chance per request), in FAULT_KINDS order
    latency_s: float = 0.0
    jitter_s: float = 0.0
    retry_after_s: int = 1
    hold_s: float = 2.0
    only: str = ""  # path prefix the faults are limited to; latency applies to every path

    @property
    def spec(self) -> str:
        parts = [f"{kind}={rate:g}" for kind, rate in self.rates]
        parts += [f"latency={self.latency_s:g}"] if self.latency_s else []
        parts += [f"jitter={self.jitter_s:g}"] if self.jitter_s else []
        parts += [f"retry_after={self.retry_after_s}"] if ("throttle" in dict(self.rates)) else []
        parts += [f"hold={self.hold_s:g}"] if ("timeout" in dict(self.rates)) else []
        parts += [f"only={self.only}"] if self.only else []
        return ",".join(parts)

    @property
    def active(self) -> bool:
        return bool(self.rates or self.latency_s or self.jitter_s)


def parse_toxics(text: str) -> Toxics:
    """A Toxics from its spec; a mistake raises ToxicSpecError with a one-line message."""
    rates: dict[str, float] = {}
    settings: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, value = part.partition("=")
        if not sep or name not in FAULT_KINDS + SETTINGS:
            raise ToxicSpecError(f"bad toxic {part!r}: write KIND=RATE with KIND one of {', '.join(FAULT_KINDS)},"
                                 f" or one of {', '.join(f'{s}=...' for s in SETTINGS)}")
        if name == "only":
            if not value.startswith("/"):
                raise ToxicSpecError(f"only= takes a path prefix such as /product/, not {value!r}")
            settings[name] = value
            continue
        try:
            number = float(value)
        except ValueError:
            raise ToxicSpecError(f"{name}= takes a number, not {value!r}") from None
        if number < 0 or (name in FAULT_KINDS and number > 1):
            raise ToxicSpecError(f"{name}={value}: a rate is between 0 and 1, a time zero or more seconds")
        if name in FAULT_KINDS:
            rates[name] = number
        else:
            settings[name] = value
    if sum(rates.values()) > 1:
        raise ToxicSpecError(f"the fault rates add up to {sum(rates.values()):g}, more than 1")
    return Toxics(rates=tuple((k, rates[k]) for k in FAULT_KINDS if rates.get(k)),
                  latency_s=float(settings.get("latency", 0)), jitter_s=float(settings.get("jitter", 0)),
                  retry_after_s=int(float(settings.get("retry_after", 1))),
                  hold_s=float(settings.get("hold", 2.0)), only=settings.get("only", ""))


@dataclass
class ToxicDice:
    """Rolls each request's fault and delay from (seed, path, how many times the path was asked for)."""

    toxics: Toxics
    seed: int
    _asked: Counter = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def roll(self, path: str) -> tuple[str | None, float]:
        """The fault for this request of `path` (None for none) and its added delay in seconds."""
        with self._lock:
            self._asked[path] += 1
            nth = self._asked[path]
        rng = random.Random(f"killtest-toxics:{self.seed}:{path}:{nth}")
        delay = max(0.0, self.toxics.latency_s + rng.uniform(-self.toxics.jitter_s, self.toxics.jitter_s))
        roll = rng.random()
        if path.startswith(self.toxics.only):
            for kind, rate in self.toxics.rates:
                if roll < rate:
                    return kind, delay
                roll -= rate
        return None, delay
