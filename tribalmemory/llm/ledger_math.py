"""Pure arithmetic of the cost ledger: money in integer nano-dollars, month keys, admission.

Money is kept as integers of 1e-9 USD ("nano-dollars") so that sums and the ceiling
comparison are exact: float sums could round a month's spend just past its ceiling. Costs are
rounded UP to the next nano-dollar (spend is never under-counted); the ceiling is rounded DOWN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
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


# ---------------------------------------------------------------- what an answer is charged

#: An answer longer than this many characters per ``max_tokens`` token is not counted: it is
#: certainly over ``max_tokens`` (the longest tokenizer tokens are a few dozen characters).
CHARS_PER_TOKEN_LIMIT = 32


@dataclass(frozen=True)
class Charge:
    """The tokens an answer is charged for, and what was wrong with the provider's report."""

    prompt_tokens: int
    completion_tokens: int
    problems: tuple[str, ...] = ()


def reported_count(value: object) -> int | None:
    """A usage count as a provider reported it: a non-negative whole number, else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value) if value >= 0 else None


def _charged(name: str, reported: object, counted: int, worst: int, problems: list[str]) -> int:
    if reported is None:  # not reported at all: what was counted locally
        return counted
    value = reported_count(reported)
    if value is None:
        problems.append(f"{name} {reported!r} is not a non-negative whole number")
        return worst
    if value > worst:
        problems.append(f"{name} {value} is more than the {worst} the call could use")
        return worst
    return max(value, counted)


def charge(
    *,
    reported_prompt: object,
    reported_completion: object,
    counted_prompt: int,
    counted_completion: int,
    max_tokens: int,
) -> Charge:
    """Tokens to charge for one answer: ``max(reported, counted)``, within the reservation.

    ``counted_prompt`` is litellm's local count of the prompt (the reservation covers
    :func:`worst_case_prompt_tokens` of it); ``counted_completion`` the local count of the
    answer (any number above ``max_tokens`` when it was too long to count). A report that is
    missing counts as the local count; one that is negative, not a whole number or beyond what
    the call could use is rejected and charged at the worst case, with a problem named. An
    answer longer than ``max_tokens`` is charged ``max_tokens`` (the most a provider that
    honours it can bill).
    """
    if min(counted_prompt, counted_completion, max_tokens) < 0:
        raise ValueError("token counts are non-negative")
    problems: list[str] = []
    if counted_completion > max_tokens:
        problems.append(f"the answer is longer than max_tokens {max_tokens}")
    prompt = _charged(
        "prompt_tokens",
        reported_prompt,
        counted_prompt,
        worst_case_prompt_tokens(counted_prompt),
        problems,
    )
    completion = _charged(
        "completion_tokens",
        reported_completion,
        min(counted_completion, max_tokens),
        max_tokens,
        problems,
    )
    return Charge(prompt, completion, tuple(problems))


def settled_nano(cost_usd: float, reserved_nano: int) -> tuple[int, str]:
    """The cost a reservation settles at, in nano-dollars, and why it was changed ("" if not).

    A settled cost never exceeds its reservation, so the month's spend never passes the ceiling
    whatever a provider reports; a cost that is not a non-negative number counts at the
    reservation (the call may have been billed).
    """
    if reserved_nano < 0:
        raise ValueError("a reservation is non-negative")
    if not isinstance(cost_usd, int | float) or math.isnan(cost_usd) or cost_usd < 0:
        return reserved_nano, f"cost {cost_usd!r} is not a non-negative number"
    over = f"cost ${cost_usd:.9f} is more than the reservation ${nano_to_usd(reserved_nano):.9f}"
    # The first test only keeps huge costs out of usd_to_nano (no float overflow).
    if cost_usd > nano_to_usd(reserved_nano) + 1.0 or usd_to_nano(cost_usd) > reserved_nano:
        return reserved_nano, over
    return usd_to_nano(cost_usd), ""
