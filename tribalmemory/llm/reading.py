"""Reading one answer: what it is charged, whether it is JSON, whether it validates."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from . import ledger_math as lm
from .prompts import parse_json_object

T = TypeVar("T")


@dataclass(frozen=True)
class Read:
    """What one answer gave: the outcome kind, the validated value and the charge."""

    kind: str
    detail: str
    value: Any
    charge: lm.Charge


def read_answer(
    response: Any,
    counted: int,
    max_tokens: int,
    validate: Callable[[dict[str, Any]], T],
    count_answer: Callable[[str, int], int],
) -> Read:
    """Charge, parse and validate one answer (pure but for ``count_answer``, which counts the
    answer's tokens locally). Raises on an answer of an unexpected shape."""
    choice = response.choices[0]
    content = choice.message.content or ""
    if not isinstance(content, str):
        raise TypeError(f"message content is {type(content).__name__}, not text")
    usage = getattr(response, "usage", None)
    charge = lm.charge(
        reported_prompt=getattr(usage, "prompt_tokens", None),
        reported_completion=getattr(usage, "completion_tokens", None),
        counted_prompt=counted,
        counted_completion=count_answer(content, max_tokens),
        max_tokens=max_tokens,
    )
    try:
        data = parse_json_object(content)
    except ValueError as exc:
        kind = "truncated" if choice.finish_reason == "length" else "invalid_json"
        return Read(kind, str(exc), None, charge)
    try:
        value = validate(data)
    except (ValueError, TypeError, KeyError) as exc:
        return Read("invalid_answer", str(exc) or type(exc).__name__, None, charge)
    return Read("ok", "", value, charge)
