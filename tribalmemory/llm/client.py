"""The LLM client: every call goes through ``litellm.acompletion`` and the cost ledger.

:class:`LLMClient` is a thin facade over parts with one job each: :mod:`.providers` (which
provider and model, whether litellm is needed; litellm is imported lazily on first use, with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` so that the import never fetches a price map),
:mod:`.startup` (the start-up check: key, price, settings), :mod:`.calls` (one logical call:
its attempts and retries), :mod:`.budget` (reservations and settlements in the
:class:`~.ledger.Ledger`, the monthly ceiling), :mod:`.reading` (an answer's charge, JSON and
validation), :mod:`.failures` (what a failed request was), :mod:`.health` (``degraded``, usage
anomalies, logged state changes) and :mod:`.recovery` (re-probes of a provider that failed).

One logical call (:meth:`LLMClient.complete_json`) makes up to ``1 + max_retries`` attempts;
when all fail the caller gets :class:`LLMUnavailable` and falls back. A provider that answers,
but whose answers are of no use :data:`DEGRADED_AFTER` calls in a row (not JSON, cut off,
failing validation, refused as a bad request), makes the state ``degraded`` until a call
succeeds; calls go on meanwhile.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ..config import EpisodesConfig
from . import startup
from .budget import Budget
from .calls import Calls
from .failures import LLMUnavailable, classify_error
from .health import DEGRADED_AFTER, OFFLINE, QUIET_STATES, Health
from .ledger import Ledger
from .prompts import PURPOSES, Prompt
from .providers import (
    DEFAULT_ENDPOINTS,
    known_missing_keys,
    llm_configured,
    load_litellm,
    needs_litellm,
    unreachable_reason,
)
from .recovery import FIRST_PROBE_SECONDS, MAX_PROBE_SECONDS, PROBE, WAIT, Recovery

__all__ = [
    "DEGRADED_AFTER",
    "OFFLINE",
    "QUIET_STATES",
    "LLMClient",
    "LLMUnavailable",
    "classify_error",
    "known_missing_keys",
    "llm_configured",
    "load_litellm",
    "needs_litellm",
]

T = TypeVar("T")


class LLMClient:
    """Calls the configured model for the episode engine, within the ledger's limits.

    Prices: see :mod:`.startup`. ``api_key`` overrides the provider's environment variable.
    ``config`` is read on every call, so a raised ``monthly_cost_ceiling`` applies at once;
    provider, model and prices are fixed by the start-up check. ``probe_first`` / ``probe_max``
    set the re-probe schedule after a provider failure (:mod:`.recovery`).
    """

    def __init__(
        self,
        config: EpisodesConfig,
        ledger: Ledger,
        *,
        api_key: str | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        probe_first: float = FIRST_PROBE_SECONDS,
        probe_max: float = MAX_PROBE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.ledger = ledger
        self.recovery = Recovery(first=probe_first, cap=probe_max, monotonic=monotonic)
        self.budget = Budget(config, ledger)
        self.health = Health()
        self.calls = Calls(
            config,
            self.budget,
            self.health,
            self.recovery,
            self.status,
            api_key=api_key,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
        )
        self._api_key = api_key
        self._startup: startup.Startup | None = None
        self._lock = threading.Lock()

    @property
    def provider(self) -> str:
        """The litellm provider found by the start-up check ("" before it)."""
        return self._startup.provider if self._startup else ""

    @property
    def model(self) -> str:
        """The litellm model string found by the start-up check ("" before it)."""
        return self._startup.model if self._startup else ""

    # ------------------------------------------------------------ start-up checks

    def probe(self, timeout: float = 3.0) -> dict[str, Any]:
        """Open (and close) a TCP connection to the provider's endpoint: no request, no cost.

        An endpoint that cannot be reached marks the LLM ``unreachable`` (logged, shown in
        :meth:`status`); it is probed again with backoff (:mod:`.recovery`).
        """
        found = self._startup
        if found is None or not found.ready:
            return self.status()
        url = found.api_base or DEFAULT_ENDPOINTS.get(found.provider)
        if not url:
            return self.status()
        reason = unreachable_reason(url, timeout)
        if reason is not None:
            self.recovery.fail("unreachable", reason)
        return self.status()

    def check_startup(self, *, force: bool = False) -> dict[str, Any]:
        """Check key, model price and settings without any network call; log once if not
        ready. The result is kept; ``force`` checks again (e.g. after a key was added) and
        lets a provider that failed be probed at once.
        Imports litellm (a few seconds) unless the LLM is off or its key is known to be
        missing (:mod:`.keys`): run it off the start-up path, e.g. with :meth:`acheck_startup`."""
        with self._lock:
            if self._startup is None or force:
                self._startup = startup.check(self.config, self._api_key)
        if force:
            self.recovery.retry_now()
        return self.status()

    async def acheck_startup(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.check_startup)

    # ------------------------------------------------------------ status

    def status(self) -> dict[str, Any]:
        """``{"state": ready|degraded|offline|no_api_key|unknown_model|ceiling_reached|
        unreachable|disabled, "reason": ..., "consecutive_failures": n, "last_error": ...}``, plus
        ``next_probe`` (UTC) while a failed provider waits for its re-probe, ``pricing`` (where
        the prices come from; says when the spend is an estimate) and ``usage_anomalies``
        (answers whose reported usage was rejected). ``consecutive_failures`` counts the calls
        in a row that got no usable answer (``degraded`` from :data:`DEGRADED_AFTER`), and
        ``last_error`` says why the last of them failed (null after a success). Logs a WARNING
        when the state changed since it was last seen."""
        found = self._startup
        if found is None:
            return self.check_startup()
        result: dict[str, Any] = found.status()
        if found.ready:
            result = (
                self.budget.ceiling_status(found.prices)
                or self.recovery.status()
                or self.health.degraded_status(found.model)
                or result
            )
        self.health.note(result)
        out = dict(result)
        out.update(self.health.counts())
        if found.pricing:
            out["pricing"] = found.pricing
        anomalies = self.health.anomalies()
        if anomalies is not None:
            out["usage_anomalies"] = anomalies
        return out

    def configured(self) -> bool:
        """True when the start-up check passed: a provider, a key and a price, so calls may be
        made (now, or once an outage or the ceiling allows). False when offline, disabled or
        unpriced (nothing but a new configuration changes that), or not checked yet."""
        found = self._startup
        return found is not None and found.ready

    def available(self) -> bool:
        """True when a call would be made now: the LLM is ready or degraded (calls go on, so
        that one that succeeds ends it), or a provider that failed is due for its re-probe."""
        state = self.status()["state"]
        return state in ("ready", "degraded") or (
            state == self.recovery.state and self.recovery.due()
        )

    def outage_probe_in(self) -> float | None:
        """During a provider outage (``unreachable``, a rejected key, an unknown model):
        seconds until its re-probe is due (0: due, or being made). None when no outage."""
        return self.recovery.seconds_to_probe()

    def retry_now(self) -> None:
        """Let the next call probe a provider that failed at once (an explicit request)."""
        self.recovery.retry_now()

    def on_change(self, listener: Callable[[str | None, str], None]) -> None:
        """Call ``listener(previous, state)`` whenever the state seen by :meth:`status`
        changes (from any thread: the listener must be thread-safe)."""
        self.health.on_change(listener)

    # ------------------------------------------------------------ calls

    async def run(
        self, prompt: Prompt[T], *, episode_id: str | None = None, memory_id: str | None = None
    ) -> T:
        """:meth:`complete_json` for a :class:`~.prompts.Prompt`."""
        return await self.complete_json(
            prompt.purpose,
            prompt.messages,
            prompt.validate,
            episode_id=episode_id,
            memory_id=memory_id,
            max_tokens=prompt.max_tokens,
        )

    async def complete_json(
        self,
        purpose: str,
        messages: list[dict[str, Any]],
        validate: Callable[[dict[str, Any]], T],
        *,
        episode_id: str | None = None,
        memory_id: str | None = None,
        max_tokens: int | None = None,
    ) -> T:
        """One JSON answer, validated by ``validate``; raises :class:`LLMUnavailable`.

        While a provider that failed waits for its re-probe, no request is made; the first call
        once it is due is the probe (one attempt)."""
        if purpose not in PURPOSES:
            raise ValueError(f"unknown purpose {purpose!r}; expected one of {PURPOSES}")
        if self._startup is None:
            await asyncio.to_thread(self.check_startup)
        found = self._startup
        assert found is not None
        if not found.ready:
            raise LLMUnavailable(found.reason, found.state)
        admitted = self.recovery.admit()
        if admitted == WAIT:
            outage = self.recovery.status() or {"state": "unreachable", "reason": "probing"}
            raise LLMUnavailable(outage["reason"], outage["state"])
        try:
            return await self.calls.call(
                found,
                purpose,
                messages,
                validate,
                episode_id=episode_id,
                memory_id=memory_id,
                max_tokens=max_tokens,
                attempts=1 if admitted == PROBE else 1 + self.config.max_retries,
            )
        finally:
            if admitted == PROBE:
                self.recovery.release()
