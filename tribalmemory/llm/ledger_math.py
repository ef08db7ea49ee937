"""Pure arithmetic of the cost ledger: money in integer nano-dollars, month keys, admission.

Money is kept as integers of 1e-9 USD ("nano-dollars") so that sums and the ceiling
comparison are exact: float sums could round a month's spend just past its ceiling. Costs are
rounded UP to the next nano-dollar (spend is never under-counted); the ceiling is rounded DOWN.
"""

from __future__ import annotations

import math
from datetime import datetime

from ..timeutil import ensure_utc

NANO_PER_USD = 1_000_000_000

#: Worst-case prompt tokens = counted tokens x (1 + ratio) + fixed tokens. Covers differences
#: between litellm's local count and the provider's billing count (chat framing, tokenizer
#: version, JSON-mode system additions).
PROMPT_MARGIN_RATIO = 0.10
PROMPT_MARGIN_TOKENS = 32


def usd_to_nano(usd: float) -> int:
    """USD to nano-dollars, rounded up (a cost is never under-counted)."""
    if usd < 0 or math.isnan(usd):
        raise ValueError(f"a cost must be a non-negative number, got {usd!r}")
    # round() first absorbs float noise such as 2550.0000000000005 before ceil().
    return math.ceil(round(usd * NANO_PER_USD, 3))


def ceiling_to_nano(usd: float) -> int:
    """A ceiling in USD to nano-dollars, rounded down (never more budget than configured)."""
    if usd < 0 or math.isnan(usd):
        raise ValueError(f"a ceiling must be a non-negative number, got {usd!r}")
    return math.floor(round(usd * NANO_PER_USD, 3))


def nano_to_usd(nano: int) -> float:
    return nano / NANO_PER_USD


def worst_case_prompt_tokens(counted: int) -> int:
    """Prompt tokens to reserve for: the local count plus the safety margin."""
    if counted < 0:
        raise ValueError("token counts are non-negative")
    return math.ceil(round(counted * (1 + PROMPT_MARGIN_RATIO), 6)) + PROMPT_MARGIN_TOKENS


def worst_case_cost_usd(
    prompt_tokens: int, max_tokens: int, input_cost_per_token: float, output_cost_per_token: float
) -> float:
    """Cost if the prompt is billed at its margin and the answer uses every max_tokens token."""
    if max_tokens < 0 or input_cost_per_token < 0 or output_cost_per_token < 0:
        raise ValueError("max_tokens and prices are non-negative")
    return (
        worst_case_prompt_tokens(prompt_tokens) * input_cost_per_token
        + max_tokens * output_cost_per_token
    )


def usage_cost_usd(
    prompt_tokens: int,
    completion_tokens: int,
    input_cost_per_token: float,
    output_cost_per_token: float,
) -> float:
    """Plain usage x price (fallback when litellm cannot price a response)."""
    return prompt_tokens * input_cost_per_token + completion_tokens * output_cost_per_token


def can_reserve(spent: int, reserved: int, new: int, ceiling: int) -> bool:
    """True when settled spend + open reservations + the new reservation stay within the ceiling.

    All arguments are nano-dollars. A zero-cost call (local model) fits even a zero ceiling.
    """
    if min(spent, reserved, new, ceiling) < 0:
        raise ValueError("amounts are non-negative")
    return spent + reserved + new <= ceiling


def remaining(spent: int, reserved: int, ceiling: int) -> int:
    """Budget left this month in nano-dollars (0 when spent or over)."""
    return max(0, ceiling - spent - reserved)


def month_key(moment: datetime) -> str:
    """Calendar month in UTC, e.g. ``2026-11``; naive datetimes are taken as UTC."""
    utc = ensure_utc(moment)
    return f"{utc.year:04d}-{utc.month:02d}"
