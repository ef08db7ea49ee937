"""The budget of each attempt: its worst case reserved in the :class:`~.ledger.Ledger` within
the monthly ceiling and the per-memory call cap, then settled at what the answer is charged."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from typing import Any

from ..config import EpisodesConfig
from . import ledger_math as lm
from .failures import LLMUnavailable
from .ledger import DENIED_CEILING, Ledger, Reservation

logger = logging.getLogger("tribalmemory.llm")

# status() runs on every write; it may reuse the month's ledger totals for this long
# (reserve() always reads them afresh, so this never lets a call through).
STATUS_MAX_AGE = 1.0


def count_prompt(lit: Any, model: str, messages: list[dict[str, Any]]) -> int:
    """Tokens of a prompt, counted locally; an over-estimate when the tokenizer is unknown."""
    try:
        return int(lit.token_counter(model=model, messages=messages))
    except Exception:  # noqa: BLE001 - unknown tokenizer: over-estimate
        return sum(len(str(m.get("content") or "")) for m in messages) // 2 + 16


def count_answer(lit: Any, model: str, content: str, max_tokens: int) -> int:
    """Tokens of an answer, counted locally; its length when it is far over max_tokens."""
    if len(content) > max_tokens * lm.CHARS_PER_TOKEN_LIMIT:
        return len(content)  # certainly more than max_tokens: not worth counting
    try:
        return int(lit.token_counter(model=model, text=content))
    except Exception:  # noqa: BLE001 - unknown tokenizer: about 4 characters a token
        return len(content) // 4


def usd(amount: float) -> str:
    return f"${amount:.2f}" if amount >= 1 or amount == 0 else f"${amount:.6f}"


class Budget:
    """Reservations and settlements of one client's calls. ``config`` is read on every call,
    so a raised ``monthly_cost_ceiling`` applies at once."""

    def __init__(self, config: EpisodesConfig, ledger: Ledger) -> None:
        self.config = config
        self.ledger = ledger
        self._denied: tuple[str, float] | None = None  # (month, ceiling) of the last denial
        self._decided = 0  # the ledger row of the latest decision that set or cleared _denied

    async def reserve(
        self,
        *,
        purpose: str,
        model: str,
        worst: float,
        call_id: str,
        attempt: int,
        episode_id: str | None,
        memory_id: str | None,
        counted: int,
    ) -> Reservation:
        """The attempt's reservation; :class:`LLMUnavailable` (``ceiling``, ``call_cap``,
        ``ledger``) when it is denied or the ledger cannot be used."""
        try:
            res = await asyncio.to_thread(
                self.ledger.reserve,
                purpose=purpose,
                model=model,
                reserved_usd=worst,
                call_id=call_id,
                attempt=attempt,
                episode_id=episode_id,
                memory_id=memory_id,
                prompt_tokens=counted,
                ceiling_usd=self.config.monthly_cost_ceiling,
                call_cap=self.config.max_llm_calls_per_memory,
            )
        except sqlite3.Error as exc:
            raise LLMUnavailable(f"cost ledger unavailable: {exc}", "ledger") from exc
        # concurrent calls come back from their threads in any order: only the ledger's latest
        # decision says whether the ceiling stops calls (a grant returning after a later
        # denial must not clear it)
        latest = res.row > self._decided
        if res.granted:
            if latest:
                self._denied, self._decided = None, res.row
            return res
        if res.outcome == DENIED_CEILING:
            if latest:
                self._denied = (res.month, self.config.monthly_cost_ceiling)
                self._decided = res.row
            raise LLMUnavailable(f"monthly cost ceiling: {res.detail}", "ceiling")
        raise LLMUnavailable(f"call cap: {res.detail}", "call_cap")

    def settle(self, row_id: int, **kwargs: Any) -> None:
        """Settle a ledger row; a ledger failure is logged, never raised into the caller
        (the open reservation is later closed as abandoned, at its reserved cost)."""
        try:
            self.ledger.settle(row_id, **kwargs)
        except (sqlite3.Error, KeyError, ValueError):
            logger.exception("LLM ledger: could not settle row %s", row_id)

    def settle_cancelled(self, res: Reservation) -> None:
        """Settle the row of a call its caller cancelled, at its reservation (a request that
        was sent may be billed)."""
        assert res.id is not None
        self.settle(
            res.id,
            outcome="error:cancelled",
            cost_usd=res.reserved_usd,
            detail="cancelled by the caller",
        )

    def ceiling_status(self, prices: tuple[float, float]) -> dict[str, str] | None:
        """``ceiling_reached`` when this month's spend (or the last denial) reached the ceiling."""
        month = lm.month_key(self.ledger.clock())
        ceiling = self.config.monthly_cost_ceiling
        spent, held = self.ledger.month_totals(month, max_age=STATUS_MAX_AGE)[:2]
        denied = (
            self._denied is not None and self._denied[0] == month and ceiling <= self._denied[1]
        )
        if not (denied or (prices != (0.0, 0.0) and spent + held >= ceiling)):
            return None
        if ceiling == 0:  # a ceiling set to none: no month brings calls back
            reason = "monthly_cost_ceiling is 0: no LLM call is made (raise it to allow LLM work)"
        else:
            reason = (
                f"monthly LLM cost ceiling reached: {usd(spent + held)} spent of {usd(ceiling)} "
                f"in {month} (UTC); LLM work resumes next month or when monthly_cost_ceiling is "
                "raised"
            )
        return {"state": "ceiling_reached", "reason": reason}
