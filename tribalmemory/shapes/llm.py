"""The LLM's state and the month's spend (the ledger)."""

from __future__ import annotations

from pydantic import Field

from .base import (
    OpenResponse,
    Response,
)


class LlmStatus(OpenResponse):
    state: str = Field(
        description="ready, degraded, starting, offline, disabled, no_api_key, unknown_model, "
        "ceiling_reached or unreachable (degraded: the provider answers, but the last calls "
        "got no usable answer; offline: no API key configured, so episodes run extractive: "
        "a mode, not a fault; no_api_key: the provider rejected the key)"
    )
    reason: str
    fallback: str | None = Field(None, description="What episodes do without the LLM.")
    consecutive_failures: int = Field(
        0,
        description="LLM calls in a row that got no usable answer (not JSON, cut off, failing "
        "validation); a few in a row make the state degraded (docs/llm.md); 0 after a call "
        "succeeds.",
    )
    last_error: str | None = Field(
        None, description="Why the last of those calls failed (null when none failed)."
    )


class CallTotals(Response):
    calls: int
    tokens: int
    cost_usd: float


class Costs(Response):
    """The month's LLM spend of the episode engine (the month's totals are 0 without calls)."""

    llm: LlmStatus
    month: str | None = None
    spend_usd: float = 0.0
    reserved_usd: float = 0.0
    ceiling_usd: float | None = None
    remaining_usd: float | None = None
    calls: int = 0
    ok_calls: int = 0
    failed_calls: int = 0
    denied_calls: int = 0
    open_reservations: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    by_purpose: dict[str, CallTotals] = Field(default_factory=dict)
    by_model: dict[str, CallTotals] = Field(default_factory=dict)
    by_episode: dict[str, float] = Field(default_factory=dict)
    by_day: dict[str, CallTotals] = Field(
        default_factory=dict,
        description="The month's calls by UTC day of the call (YYYY-MM-DD), oldest first.",
    )
