"""One logical call: up to ``attempts`` requests through ``litellm.acompletion``.

Each attempt first reserves its worst-case cost (:mod:`.budget`; denied → no request,
:class:`~.failures.LLMUnavailable` at once), then calls the provider with litellm's own retries
turned off, then settles the ledger row with what the answer is charged: the provider's
reported usage checked against local token counts and clamped to the reservation
(:func:`~.ledger_math.charge`, :mod:`.reading`). 429, 5xx, timeouts, connection errors, non-JSON
or truncated answers and answers that fail validation are retried with exponential backoff;
anything else (401, 404, 400) is not. A provider-side failure starts an outage
(:mod:`.recovery`); an answer of no use counts towards ``degraded`` (:mod:`.health`).
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from ..config import EpisodesConfig
from . import ledger_math as lm
from . import loop as llm_loop
from .budget import Budget, count_answer, count_prompt
from .failures import (
    BILLED_ERRORS,
    RETRYABLE,
    TRANSPORT_ERRORS,
    LLMUnavailable,
    classify_error,
    retry_after,
    short,
)
from .health import Health
from .ledger import Reservation
from .providers import load_litellm
from .reading import Read, read_answer
from .recovery import Recovery
from .startup import Startup

logger = logging.getLogger("tribalmemory.llm")

T = TypeVar("T")

#: Extra seconds past request_timeout_seconds before asyncio gives up on a hung request.
TIMEOUT_GRACE_SECONDS = 2.0


def request_kwargs(
    cfg: EpisodesConfig,
    startup: Startup,
    api_key: str | None,
    messages: list[dict[str, Any]],
    max_tokens: int,
) -> dict[str, Any]:
    """The arguments of one ``litellm.acompletion`` request (its own retries off)."""
    kwargs: dict[str, Any] = {
        "model": startup.model,
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": cfg.summarizer_temperature,
        "timeout": cfg.request_timeout_seconds,
        "num_retries": 0,
        "max_retries": 0,
        "drop_params": True,
    }
    if startup.api_base:
        kwargs["api_base"] = startup.api_base
    if api_key:
        kwargs["api_key"] = api_key
    if startup.json_mode:
        kwargs["response_format"] = {"type": "json_object"}
    return kwargs


class Calls:
    """Makes the calls of one client; ``refresh`` re-reads its status (which logs changes)."""

    def __init__(
        self,
        config: EpisodesConfig,
        budget: Budget,
        health: Health,
        recovery: Recovery,
        refresh: Callable[[], object],
        *,
        api_key: str | None,
        backoff_base: float,
        backoff_max: float,
    ) -> None:
        self.config = config
        self.budget = budget
        self.health = health
        self.recovery = recovery
        self.refresh = refresh
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._api_key = api_key

    async def call(
        self,
        startup: Startup,
        purpose: str,
        messages: list[dict[str, Any]],
        validate: Callable[[dict[str, Any]], T],
        *,
        episode_id: str | None,
        memory_id: str | None,
        max_tokens: int | None,
        attempts: int,
    ) -> T:
        """A validated answer, or :class:`LLMUnavailable` once the attempts are spent."""
        lit = load_litellm()
        cfg = self.config
        out_cap = (
            cfg.max_output_tokens
            if max_tokens is None
            else max(1, min(max_tokens, cfg.max_output_tokens))
        )
        # off the loop
        counted = await asyncio.to_thread(count_prompt, lit, startup.model, messages)
        worst = lm.worst_case_cost_usd(counted, out_cap, *startup.prices)
        call_id = uuid.uuid4().hex
        kind, detail, wait_hint = "other", "", None
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                await asyncio.sleep(self._backoff(attempt - 1, wait_hint))
            try:
                res = await self.budget.reserve(
                    purpose=purpose,
                    model=startup.model,
                    worst=worst,
                    call_id=call_id,
                    attempt=attempt,
                    episode_id=episode_id,
                    memory_id=memory_id,
                    counted=counted,
                )
            except LLMUnavailable as exc:
                if exc.kind == "ceiling":
                    self.refresh()
                raise
            ok, value, kind, detail, wait_hint = await self._attempt(
                lit, startup, res, messages, counted, out_cap, validate
            )
            if ok:
                self.health.succeeded()
                self.refresh()
                return value
            if kind not in RETRYABLE:
                break
        self._after_failure(startup.model, purpose, kind, detail)
        raise LLMUnavailable(
            f"{purpose} failed after {attempt} attempt(s): {kind}: {detail}",
            "unreachable" if kind in TRANSPORT_ERRORS else kind,
        )

    def _backoff(self, retry: int, hint: float | None) -> float:
        delay = min(self.backoff_max, self.backoff_base * 2 ** (retry - 1))
        delay *= random.uniform(0.5, 1.0)
        if hint is not None:
            delay = max(delay, min(hint, self.backoff_max))
        return delay

    async def _attempt(
        self,
        lit: Any,
        startup: Startup,
        res: Reservation,
        messages: list[dict[str, Any]],
        counted: int,
        max_tokens: int,
        validate: Callable[[dict[str, Any]], T],
    ) -> tuple[bool, Any, str, str, float | None]:
        """One request; always settles the ledger row. (ok, value, kind, detail, retry-after)."""
        assert res.id is not None
        kwargs = request_kwargs(self.config, startup, self._api_key, messages, max_tokens)
        try:
            response = await asyncio.wait_for(
                llm_loop.run(lambda: lit.acompletion(**kwargs)),
                self.config.request_timeout_seconds + TIMEOUT_GRACE_SECONDS,
            )
        except asyncio.CancelledError:
            self.budget.settle_cancelled(res)
            raise
        except Exception as exc:  # noqa: BLE001 - every provider error is classified
            kind = classify_error(lit, exc)
            # A timed-out request, or an answer litellm could not read, may still be billed:
            # count it at its worst case.
            cost = res.reserved_usd if kind in BILLED_ERRORS else 0.0
            await asyncio.to_thread(
                self.budget.settle,
                res.id,
                outcome=f"error:{kind}",
                cost_usd=cost,
                detail=short(exc),
            )
            return False, None, kind, short(exc), retry_after(exc)
        try:  # counting the answer's tokens can take milliseconds: off the event loop
            read = await asyncio.to_thread(
                read_answer,
                response,
                counted,
                max_tokens,
                validate,
                lambda content, cap: count_answer(lit, startup.model, content, cap),
            )
        except asyncio.CancelledError:
            self.budget.settle_cancelled(res)
            raise
        except Exception as exc:  # noqa: BLE001 - an answer of an unexpected shape
            worst = lm.Charge(lm.worst_case_prompt_tokens(counted), max_tokens)
            read = Read("invalid_response", f"unreadable answer: {short(exc)}", None, worst)
        charge = read.charge
        if charge.problems:
            self.health.note_anomaly(charge.problems, startup.model)
        usage_note = f"usage rejected: {'; '.join(charge.problems)}" if charge.problems else ""
        await asyncio.to_thread(
            self.budget.settle,
            res.id,
            outcome="ok" if read.kind == "ok" else f"error:{read.kind}",
            cost_usd=lm.usage_cost_usd(
                charge.prompt_tokens, charge.completion_tokens, *startup.prices
            ),
            prompt_tokens=charge.prompt_tokens,
            completion_tokens=charge.completion_tokens,
            detail="; ".join(filter(None, (read.detail, usage_note)))[:300] or None,
        )
        self.recovery.succeed()  # the provider answered, so it is reachable
        if read.kind != "ok":
            return False, None, read.kind, read.detail[:300], None
        return True, read.value, "ok", "", None

    def _after_failure(self, model: str, purpose: str, kind: str, detail: str) -> None:
        """A call failed: a provider-side failure starts (or extends) an outage; an answer of no
        use counts towards ``degraded`` (:data:`~.health.DEGRADED_AFTER`)."""
        if kind in TRANSPORT_ERRORS:
            state, reason = "unreachable", f"{model} did not answer ({kind}): {detail}"
        elif kind == "auth":
            state, reason = "no_api_key", f"the provider rejected the API key: {detail}"
        elif kind == "not_found":
            state, reason = "unknown_model", f"the provider does not know {model}: {detail}"
        else:
            self.health.answer_failed(purpose, kind, detail)
            self.refresh()
            return
        delay = self.recovery.fail(state, reason)
        logger.info("LLM %s: next probe in %.0f s", state, delay)
        self.refresh()
