"""Reading a model's answer: one JSON object, then strict checks of its keys and texts.

Over-long values are rejected, not truncated: the client retries and then falls back.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .limits import CONTROL, TITLE_MAX


def parse_json_object(text: str | None) -> dict[str, Any]:
    """Parse a model answer: one JSON object, optionally inside one ```json fence."""
    raw = (text or "").strip()
    fence = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", raw, re.S)
    if fence:
        raw = fence.group(1)
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"answer is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError("answer is not a JSON object")
    return data


def exact_keys(data: Any, required: set[str], optional: frozenset[str] = frozenset()) -> dict:
    """``data`` when it is an object with the ``required`` keys and no others but ``optional``."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    missing = required - data.keys()
    extra = data.keys() - required - optional
    if missing or extra:
        raise ValueError(f"wrong keys: missing {sorted(missing)}, unexpected {sorted(extra)}")
    return data


def bounded_text(value: Any, name: str, limit: int, *, one_line: bool = False) -> str:
    """A non-empty string of at most ``limit`` characters, stripped."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string")
    text = value.strip()
    if not text:
        raise ValueError(f"{name} is empty")
    if len(text) > limit:
        raise ValueError(f"{name} is {len(text)} characters; at most {limit} allowed")
    if one_line and CONTROL.search(text):
        raise ValueError(f"{name} must be one line without control characters")
    return text


def validate_title_text(value: Any) -> str:
    return bounded_text(value, "title", TITLE_MAX, one_line=True)
