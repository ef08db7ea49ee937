"""The LLM's health as calls see it: answers of no use in a row (``degraded``), usage reports
that were rejected, and the state last seen, whose changes are logged and told to listeners."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..timeutil import to_iso, utc_now

logger = logging.getLogger("tribalmemory.llm")

#: No API key configured: episodes run extractive, by design (the default without a key).
OFFLINE = "offline"
#: States that are a choice, not a fault: logged at INFO, shown neutral (not red).
QUIET_STATES = frozenset({OFFLINE, "disabled"})
#: Calls in a row whose answers were of no use (after their retries) before the LLM is shown as
#: ``degraded``; the next call that succeeds makes it ``ready`` again.
DEGRADED_AFTER = 3
#: A usage anomaly of the same kind is logged at WARNING at most this often (all are counted).
ANOMALY_LOG_SECONDS = 300.0


class Health:
    """What the calls went through since start-up; thread-safe."""

    def __init__(self) -> None:
        self._logged: str | None = None
        self._anomalies: dict[str, Any] | None = None
        self._anomaly_logged_at: float | None = None
        self._failed_in_a_row = 0  # calls answered without a usable answer, since the last good
        self._last_error: str | None = None
        self._listeners: list[Callable[[str | None, str], None]] = []
        self._lock = threading.Lock()

    def succeeded(self) -> None:
        """A call got a usable answer: ``degraded`` ends."""
        with self._lock:
            self._failed_in_a_row, self._last_error = 0, None

    def answer_failed(self, purpose: str, kind: str, detail: str) -> None:
        """A call got answers, none of use: one more towards :data:`DEGRADED_AFTER`."""
        with self._lock:
            self._failed_in_a_row += 1
            self._last_error = f"{purpose}: {kind}: {detail}"[:300]

    def degraded_status(self, model: str) -> dict[str, str] | None:
        """``degraded`` once :data:`DEGRADED_AFTER` calls in a row got no usable answer."""
        with self._lock:
            failed, last = self._failed_in_a_row, self._last_error
        if failed < DEGRADED_AFTER:
            return None
        return {
            "state": "degraded",
            "reason": f"{model} answers, but none of the last {failed} calls got a usable "
            f"answer (last: {last}); episodes use their fallbacks until a call succeeds",
        }

    def counts(self) -> dict[str, Any]:
        """``consecutive_failures`` and ``last_error`` (null after a success)."""
        with self._lock:
            return {"consecutive_failures": self._failed_in_a_row, "last_error": self._last_error}

    def anomalies(self) -> dict[str, Any] | None:
        """The answers whose reported usage was rejected: count, last, time; None if none."""
        return None if self._anomalies is None else dict(self._anomalies)

    def on_change(self, listener: Callable[[str | None, str], None]) -> None:
        """Call ``listener(previous, state)`` whenever the state seen by :meth:`note` changes."""
        self._listeners.append(listener)

    def note(self, result: dict[str, Any]) -> None:
        """The state is ``result``: log a change and tell the listeners."""
        with self._lock:
            previous, self._logged = self._logged, result["state"]
        if previous == result["state"]:
            return
        for listener in self._listeners:
            listener(previous, result["state"])
        if previous is None and result["state"] == "ready":
            return
        if previous is None and result["state"] in QUIET_STATES:
            # Not a fault: said at INFO here (every local command starts a client); the daemon
            # says it once at WARNING when it starts, and health and status carry it.
            logger.info("LLM %s: %s", result["state"], result["reason"])
        elif previous is None:
            logger.warning("LLM features unavailable (%s): %s", result["state"], result["reason"])
        elif result["state"] == "ready":
            logger.warning("LLM available again (was %s): %s", previous, result["reason"])
        else:
            logger.warning(
                "LLM state changed from %s to %s: %s", previous, result["state"], result["reason"]
            )

    def note_anomaly(self, problems: tuple[str, ...], model: str) -> None:
        """Count an answer whose usage report was rejected; WARNING at most every 5 minutes."""
        text = "; ".join(problems)
        now = time.monotonic()
        with self._lock:
            count = (self._anomalies or {}).get("count", 0) + 1
            self._anomalies = {
                "count": count,
                "last": f"{text} (charged at most the call's reservation)",
                "time": to_iso(utc_now()),
            }
            last = self._anomaly_logged_at
            log = last is None or now - last >= ANOMALY_LOG_SECONDS
            if log:
                self._anomaly_logged_at = now
        if log:
            logger.warning(
                "LLM provider %s reported usage that cannot be right (%s): charged at most the "
                "call's reservation, never past the ceiling; %d such answer(s) so far",
                model,
                text,
                count,
            )
