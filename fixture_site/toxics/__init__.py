"""Network faults the site injects, in the spirit of Toxiproxy's toxics, chosen per request with a seed.

Which fault the n-th request for a path meets depends only on the seed, the path and n: every
design sees the same faults at the same points of its crawl, and a run replays exactly.

A spec is comma-joined `kind=rate` (`error=0.05,throttle=0.03`), with the toxics' settings
(`latency=SECONDS`, `jitter=SECONDS`, `retry_after=SECONDS`, `hold=SECONDS`) and `only=PREFIX` to
limit the faults to paths that start with PREFIX (`only=/product/`).

Each toxic is one module of this folder that exposes `TOXIC`, an object of the `Toxic` protocol: its
name, whether it is a fault with a rate, its settings, and its effect on a request (an added delay,
an answer instead of the page, a dropped connection, or a change to the page). The registry finds
the modules itself: adding a toxic is one module, its test and its line in the docs.

- latency.py: every answer waits latency ± jitter seconds
- error.py: HTTP 503, a server error a client should retry
- throttle.py: HTTP 429 with `Retry-After`, which a polite client honours
- reset.py: the connection is closed with a TCP reset before any answer
- truncate.py: HTTP 200 with only the first half of the page
- timeout.py: the site holds the connection without a byte, then drops it
"""

from __future__ import annotations

import functools
import importlib
import itertools
import pkgutil
import random
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

ONLY = "only"  # the setting no toxic owns: the path prefix the faults are limited to


class ToxicSpecError(ValueError):
    pass


@dataclass(frozen=True)
class Setting:
    """A number a toxic reads from the spec (`hold=0.3`): zero or more, seconds unless said otherwise."""

    default: float
    whole: bool = False  # kept as a whole number (Retry-After is a whole number of seconds)

    def parse(self, name: str, text: str) -> float:
        try:
            number = float(text)
        except ValueError:
            raise ToxicSpecError(f"{name}= takes a number, not {text!r}") from None
        if number < 0:
            raise ToxicSpecError(f"{name}={text}: a rate is between 0 and 1, a time zero or more seconds")
        return int(number) if self.whole else number

    def shown(self, value: float) -> str:
        return str(int(value)) if self.whole else f"{value:g}"


class Injection(Protocol):
    """What a toxic may do to the request it was rolled for; fixture_site/app.py provides it."""

    def answer(self, status: int, text: str, headers: Mapping[str, str] | None = None) -> Any:
        """A plain-text answer the site sends instead of the page."""
        ...

    def drop(self) -> Any:
        """No answer at all: the connection is reset."""
        ...

    def hold(self, seconds: float) -> None:
        """Keep the client waiting `seconds` without a byte (the site's time, not the start's: no idleness)."""
        ...


class Toxic(Protocol):
    """One kind of network fault."""

    name: str  # the spec's `name=rate`, and the `fault` the request log records
    description: str  # one line, for the reference docs
    # Place in the dice's walk: the rates are tried in this order, so a new toxic takes the next
    # number; changing one would give old seeds other faults.
    order: int
    rated: bool  # a fault met by a share of the requests (`name=rate`); False: it acts through its settings
    settings: Mapping[str, Setting]  # the spec's settings this toxic reads, in the order a spec prints them

    def delay(self, toxics: Toxics, rng: random.Random) -> float:
        """Seconds added to every answer, rolled for each request; 0.0 for a toxic that adds none."""
        ...

    def inject(self, toxics: Toxics, injection: Injection) -> Any:
        """Its effect when rolled for a request: an answer or a drop from `injection`, or None to serve the page."""
        ...

    def alter(self, toxics: Toxics, response: Any) -> None:
        """Change the page the site serves for a request this toxic was rolled for (after the view)."""
        ...


class ToxicBase:
    """Defaults for a toxic: a fault with a rate, no settings, no delay, and no effect of its own."""

    rated = True
    settings: Mapping[str, Setting] = {}

    def delay(self, toxics: Toxics, rng: random.Random) -> float:
        return 0.0

    def inject(self, toxics: Toxics, injection: Injection) -> Any:
        return None

    def alter(self, toxics: Toxics, response: Any) -> None:
        return None


@functools.cache
def registry() -> tuple[Toxic, ...]:
    """Every toxic module of this folder, in the dice's order; read once, on first use."""
    toxics: list[Toxic] = []
    for module_info in pkgutil.iter_modules(__path__):
        toxic = getattr(importlib.import_module(f"{__name__}.{module_info.name}"), "TOXIC", None)
        if toxic is not None:
            toxics.append(toxic)
    toxics.sort(key=lambda toxic: toxic.order)
    for first, second in itertools.pairwise(toxics):
        if first.order == second.order or first.name == second.name:
            raise RuntimeError(f"toxics {first.name!r} and {second.name!r} share a name or an order")
    return tuple(toxics)


def toxic_named(name: str) -> Toxic:
    return next(toxic for toxic in registry() if toxic.name == name)


def fault_kinds() -> tuple[str, ...]:
    """The toxics a spec gives a rate, in the dice's order."""
    return tuple(toxic.name for toxic in registry() if toxic.rated)


def setting_names() -> tuple[str, ...]:
    """Every setting a spec may give, `only` last."""
    return tuple(name for toxic in registry() for name in toxic.settings) + (ONLY,)


def _setting(name: str) -> Setting:
    return next(toxic.settings[name] for toxic in registry() if name in toxic.settings)


@dataclass(frozen=True)
class Toxics:
    """A parsed spec: the faults' rates, the settings that differ from their defaults, and `only`."""

    rates: tuple[tuple[str, float], ...] = ()  # (fault kind, chance per request), in the dice's order
    settings: tuple[tuple[str, float], ...] = ()  # (setting, value) given with another value than its default
    only: str = ""  # path prefix the faults are limited to; latency applies to every path

    def setting(self, name: str) -> float:
        """A setting's value: as the spec gave it, or its toxic's default."""
        return dict(self.settings).get(name, _setting(name).default)

    @property
    def spec(self) -> str:
        """The spec that parses back to these toxics: rates, then each toxic's settings, then `only`.

        A fault's settings are written whenever it has a rate (`retry_after=1` with `throttle`); the
        settings of a toxic without a rate only when they differ from their defaults."""
        rates = dict(self.rates)
        given = dict(self.settings)
        parts = [f"{kind}={rate:g}" for kind, rate in self.rates]
        for toxic in registry():
            for name, setting in toxic.settings.items():
                if (toxic.name in rates) if toxic.rated else (name in given):
                    parts.append(f"{name}={setting.shown(self.setting(name))}")
        parts += [f"{ONLY}={self.only}"] if self.only else []
        return ",".join(parts)

    @property
    def active(self) -> bool:
        """Whether any request meets a fault or a delay."""
        unrated = {name for toxic in registry() if not toxic.rated for name in toxic.settings}
        return bool(self.rates) or any(name in unrated for name, _ in self.settings)


def parse_toxics(text: str) -> Toxics:
    """A Toxics from its spec; a mistake raises ToxicSpecError with a one-line message."""
    kinds, settings = fault_kinds(), setting_names()
    rates: dict[str, float] = {}
    given: dict[str, float] = {}
    only = ""
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, value = part.partition("=")
        if not sep or name not in kinds + settings:
            raise ToxicSpecError(f"bad toxic {part!r}: write KIND=RATE with KIND one of {', '.join(kinds)},"
                                 f" or one of {', '.join(f'{s}=...' for s in settings)}")
        if name == ONLY:
            if not value.startswith("/"):
                raise ToxicSpecError(f"only= takes a path prefix such as /product/, not {value!r}")
            only = value
        elif name in kinds:
            rate = Setting(0.0).parse(name, value)
            if rate > 1:
                raise ToxicSpecError(f"{name}={value}: a rate is between 0 and 1, a time zero or more seconds")
            rates[name] = rate
        else:
            given[name] = _setting(name).parse(name, value)
    if sum(rates.values()) > 1:
        raise ToxicSpecError(f"the fault rates add up to {sum(rates.values()):g}, more than 1")
    return Toxics(rates=tuple((kind, rates[kind]) for kind in kinds if rates.get(kind)),
                  settings=tuple((name, given[name]) for name in settings
                                 if name in given and given[name] != _setting(name).default),
                  only=only)


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
        # The delays are drawn first, then one number that picks the fault: the order of these draws
        # is part of every seeded run.
        delay = sum((toxic.delay(self.toxics, rng) for toxic in registry()), 0.0)
        roll = rng.random()
        if path.startswith(self.toxics.only):
            for kind, rate in self.toxics.rates:
                if roll < rate:
                    return kind, delay
                roll -= rate
        return None, delay
