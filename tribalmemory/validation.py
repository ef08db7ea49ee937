"""Shared checks for values that arrive from clients (HTTP bodies, MCP tool arguments, CLI).

Each function returns the cleaned value or raises :class:`InvalidInput` naming the field.
Services call them, so every interface rejects the same things with the same message.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any

from .errors import InvalidInput, PayloadTooLarge
from .models import SourceType
from .timeutil import ensure_utc, parse_iso

MAX_TAGS = 50
MAX_TAG_CHARS = 100
MAX_CONTEXT_CHARS = 2000
EPISODE_ID = re.compile(r"^ep-[0-9a-f]{8,32}$")


def text(field: str, value: Any, max_chars: int, *, required: bool = True) -> str | None:
    """A non-blank string of at most ``max_chars`` characters (too long → 413)."""
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string")
    if not value.strip():
        if not required:
            return None
        raise InvalidInput(f"{field} must not be empty or whitespace")
    if "\x00" in value:
        raise InvalidInput(f"{field} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} is not valid UTF-8 (lone surrogate characters)") from None
    if len(value) > max_chars:
        raise PayloadTooLarge(
            f"{field} has {len(value)} characters; the limit is {max_chars} "
            "(server.max_content_chars)"
        )
    return value


def tags(value: Any, field: str = "tags") -> list[str]:
    """A list of up to 50 non-blank strings; duplicates dropped, order kept."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise InvalidInput(f"{field} must be a list of strings")
    if len(value) > MAX_TAGS:
        raise InvalidInput(f"{field}: at most {MAX_TAGS} tags")
    cleaned: list[str] = []
    for tag in value:
        tag = tag.strip()
        if not tag:
            raise InvalidInput(f"{field} must not contain empty tags")
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInput(f"{field}: a tag is at most {MAX_TAG_CHARS} characters")
        if tag not in cleaned:
            cleaned.append(tag)
    return cleaned


def integer(field: str, value: Any, low: int, high: int, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an integer from {low} to {high}")
    if not low <= value <= high:
        raise InvalidInput(f"{field} must be from {low} to {high}, got {value}")
    return value


def number(field: str, value: Any, low: float, high: float, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{field} must be a number from {low} to {high}")
    if not low <= value <= high:
        raise InvalidInput(f"{field} must be from {low} to {high}, got {value}")
    return float(value)


def boolean(field: str, value: Any, default: bool = False) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidInput(f"{field} must be true or false")
    return value


def timestamp(field: str, value: Any) -> datetime | None:
    """ISO 8601; a time without a zone is UTC."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return ensure_utc(value)
    try:
        return parse_iso(value)
    except ValueError as exc:
        raise InvalidInput(f"{field}: {exc}") from None


def source_type(
    value: Any, default: SourceType = SourceType.USER_EXPLICIT, field: str = "source_type"
) -> SourceType:
    if value is None:
        return default
    try:
        return SourceType.parse(value)
    except ValueError as exc:
        raise InvalidInput(f"{field}: {exc}") from None


def source_types(value: Any) -> list[SourceType] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise InvalidInput("source_types must be a list of source type names")
    return [source_type(v, field="source_types") for v in value]


def memory_id(value: Any, field: str = "memory_id") -> str:
    """A memory id is a UUID (any case); returned in canonical lower-case form."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a memory id (a UUID string)")
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise InvalidInput(f"{field} {value[:80]!r} is not a memory id (a UUID)") from None


def memory_ids(value: Any, field: str = "memory_ids", *, max_items: int = 1000) -> list[str]:
    if not isinstance(value, list) or not value:
        raise InvalidInput(f"{field} must be a non-empty list of memory ids")
    if len(value) > max_items:
        raise InvalidInput(f"{field}: at most {max_items} ids")
    out: list[str] = []
    for item in value:
        mid = memory_id(item, field)
        if mid not in out:
            out.append(mid)
    return out


def episode_id(value: Any, field: str = "episode_id") -> str:
    if not isinstance(value, str) or not EPISODE_ID.match(value.strip()):
        raise InvalidInput(f"{field} must be an episode id like 'ep-1a2b3c4d5e6f'")
    return value.strip()
