"""When to try a failing provider again: re-probes with backoff after an outage.

A provider that failed a call (no answer, 429 or 5xx after every retry, a rejected key, an
unknown model) puts the client in a state such as ``unreachable``. It is not kept forever:
the provider is probed again after 5 s, then 10, 20, 40, 80, 160 and every 300 s
(:func:`probe_delay`). A probe is the next real call, made with one attempt; until a probe is
due, calls are refused without a request. A probe that gets an answer ends the outage; one
that fails schedules the next. :meth:`Recovery.retry_now` makes a probe due at once (an explicit
regenerate, a forced start-up check).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from ..timeutil import to_iso, utc_now

FIRST_PROBE_SECONDS = 5.0
MAX_PROBE_SECONDS = 300.0

#: What :meth:`Recovery.admit` allows: a normal call, one probe attempt, or no request.
CALL, PROBE, WAIT = "call", "probe", "wait"


def probe_delay(
    failures: int, first: float = FIRST_PROBE_SECONDS, cap: float = MAX_PROBE_SECONDS
) -> float:
    """Seconds until the next probe after ``failures`` consecutive failures (doubling, capped)."""
    if failures < 1:
        return 0.0
    return min(cap, first * 2 ** min(failures - 1, 32))


@dataclass
class Outage:
    state: str
    reason: str
    failures: int
    next_probe: float  # on the recovery's monotonic clock
    probing: bool = False


class Recovery:
    """The provider's outage, if any, and the probe schedule. Safe to share between threads."""

    def __init__(
        self,
        *,
        first: float = FIRST_PROBE_SECONDS,
        cap: float = MAX_PROBE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.first = first
        self.cap = cap
        self.monotonic = monotonic
        self._outage: Outage | None = None
        self._lock = threading.Lock()

    @property
    def state(self) -> str | None:
        outage = self._outage
        return outage.state if outage else None

    def fail(self, state: str, reason: str) -> float:
        """A call or probe failed with ``state``: schedule the next probe; returns its delay."""
        with self._lock:
            failures = self._outage.failures + 1 if self._outage else 1
            delay = probe_delay(failures, self.first, self.cap)
            self._outage = Outage(state, reason, failures, self.monotonic() + delay)
            return delay

    def succeed(self) -> bool:
        """The provider answered: the outage (if any) is over. True when there was one."""
        with self._lock:
            ended, self._outage = self._outage is not None, None
            return ended

    def admit(self) -> str:
        """:data:`CALL` (no outage), :data:`PROBE` (this caller makes the one probe attempt) or
        :data:`WAIT` (no request until the next probe is due, or another caller is probing)."""
        with self._lock:
            outage = self._outage
            if outage is None:
                return CALL
            if outage.probing or self.monotonic() < outage.next_probe:
                return WAIT
            outage.probing = True
            return PROBE

    def release(self) -> None:
        """A probe ended without an answer either way (denied by the ledger, cancelled): the
        next caller may probe."""
        with self._lock:
            if self._outage is not None:
                self._outage.probing = False

    def due(self) -> bool:
        """True when no outage, or its next probe is due and nobody is probing."""
        outage = self._outage
        return outage is None or (not outage.probing and self.monotonic() >= outage.next_probe)

    def seconds_to_probe(self) -> float | None:
        """Seconds until the next probe is due (0 when due or being made); None when no
        outage."""
        outage = self._outage
        if outage is None:
            return None
        return max(0.0, outage.next_probe - self.monotonic())

    def retry_now(self) -> None:
        """Make the next probe due at once (the failure count, and so later delays, stay)."""
        with self._lock:
            if self._outage is not None:
                self._outage.next_probe = self.monotonic()

    def status(self) -> dict[str, str] | None:
        """``{"state", "reason", "next_probe"}`` during an outage (``next_probe``: UTC ISO time),
        else None."""
        outage = self._outage
        if outage is None:
            return None
        wait = max(0.0, outage.next_probe - self.monotonic())
        when = to_iso((utc_now() + timedelta(seconds=wait)).replace(microsecond=0))
        if outage.probing:
            plan = "probing it now"
        elif wait > 0:
            plan = f"probing it again in {wait:.0f} s ({outage.failures} failed so far)"
        else:
            plan = "the next LLM call probes it"
        return {"state": outage.state, "reason": f"{outage.reason}; {plan}", "next_probe": when}
