"""Shared checks for values that arrive from clients (HTTP bodies, MCP tool arguments, CLI).

Each function returns the cleaned value or raises :class:`InvalidInput` naming the field.
Services call them, so every interface rejects the same things with the same message. The
limits come from :mod:`tribalmemory.shapes`, where the schemas that advertise them are defined.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, TypeVar

from . import projects
from .errors import BadName, InvalidInput, PayloadTooLarge
from .models import SourceType
from .shapes import (
    EPISODE_ID_PATTERN,
    EPISODE_STATUSES,
    MAX_ENTITY_CHARS,
    MAX_EPISODE_ID_CHARS,
    MAX_FUTURE_SECONDS,
    MAX_MEMORY_IDS,
    MAX_METADATA_CHARS,
    MAX_METADATA_FIELDS,
    MAX_NODE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    METADATA_KEY_PATTERN,
    SCOPES,
    EpisodeStatus,
    Range,
    Request,
)
from .timeutil import ensure_utc, parse_iso, to_iso, utc_now

S = TypeVar("S", bound=str)
EPISODE_ID = re.compile(EPISODE_ID_PATTERN)
METADATA_KEY = re.compile(METADATA_KEY_PATTERN)
EPISODE_PREFIX = "episode:"
TAG_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters a tag may not hold: all but tab and newline (NUL among them)."""


def names(
    data: Mapping[str, Any],
    allowed: Iterable[str],
    required: Iterable[str] = (),
    *,
    noun: str = "field",
) -> None:
    """Refuse names that are not ``allowed`` (naming them and the allowed ones) or missing."""
    allowed = list(allowed)
    unknown = [name for name in data if name not in allowed]
    if unknown:
        listed = ", ".join(repr(name[:60]) for name in unknown[:10])
        raise InvalidInput(
            f"unknown {noun}{'s' if len(unknown) > 1 else ''} {listed}; "
            f"allowed: {', '.join(allowed) or 'none'}",
            {"allowed": allowed},
        )
    missing = [name for name in required if name not in data]
    if missing:
        raise InvalidInput(
            f"missing required {noun}{'s' if len(missing) > 1 else ''}: {', '.join(missing)}"
        )


def fields(data: Mapping[str, Any], request: type[Request]) -> None:
    """``data`` has only the fields of ``request`` and all of its required ones."""
    names(data, request.field_names(), request.required_names())


def text(
    field: str, value: Any, max_chars: int, *, required: bool = True, setting: str | None = None
) -> str | None:
    """A non-blank string of at most ``max_chars`` characters (too long → 413).

    ``setting`` names the configuration key the limit comes from, if any.
    """
    if value is None and not required:
        return None
    if value is None:
        raise InvalidInput(f"{field} must be a string, and is missing")
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
        source = f" ({setting})" if setting else ""
        raise PayloadTooLarge(
            f"{field} has {len(value)} characters; the limit is {max_chars}{source}",
            f"Send a shorter {field} (at most {max_chars} characters).",
        )
    return value


def given_text(field: str, value: Any, max_chars: int) -> str | None:
    """None when ``value`` is not given; else :func:`text`'s check, a blank one refused (a value
    sent must say something: dropped, it would silently mean none)."""
    return None if value is None else text(field, value, max_chars)


def scopes(request: Any) -> dict[str, str]:
    """The scope filters ``request`` gives (its ``source_instance``, ``session`` and ``run``
    attributes, as sent; None: not given), checked: {name: value}. An empty or blank one is
    refused (it would match nothing); session and run are matched stripped, as stored."""
    found: dict[str, str] = {}
    for name, (chars, _) in SCOPES.items():
        value = getattr(request, name, None)
        checked = given_text(name, value, chars)
        if checked is not None:
            found[name] = checked if name == "source_instance" else checked.strip()
    return found


def tags(value: Any, field: str = "tags") -> list[str]:
    """A list of up to 50 non-blank strings without control characters (tab and newline
    aside: :data:`TAG_CONTROL`); duplicates dropped, order kept."""
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
        control = TAG_CONTROL.search(tag)
        if control:
            raise InvalidInput(
                f"{field}: tag {tag[:40]!r} contains the control character "
                f"U+{ord(control.group()):04X}; tags may not contain control characters"
            )
        if tag not in cleaned:
            cleaned.append(tag)
    return cleaned


def entity_name(value: Any, field: str = "name") -> str:
    """An entity's name or alias: a non-blank string of at most ``MAX_ENTITY_CHARS``."""
    name = text(field, value, MAX_ENTITY_CHARS)
    assert name is not None
    return name


LINK_ID = re.compile(r"^cl-[0-9a-f]{12}$")


def link_id(value: Any, field: str = "link_id") -> str:
    """A causal link's id: ``cl-`` and 12 hex digits (any case)."""
    if not isinstance(value, str) or not LINK_ID.match(value.strip().lower()):
        raise InvalidInput(f"{field} must be a causal link id like 'cl-0123456789ab'")
    return value.strip().lower()


def node(value: Any, field: str = "node") -> str:
    """A causal link's node in canonical form, ``episode:<id>`` or ``memory:<id>``, from
    either form or a bare id (a UUID is a memory, anything else an episode id). Whether it
    exists, in which project, is the episode engine's answer (404)."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NODE_CHARS:
        raise InvalidInput(
            f"{field} must be a node: 'episode:<id>' or 'memory:<id>' (at most "
            f"{MAX_NODE_CHARS} characters)"
        )
    raw = value.strip()
    kind, _, key = raw.partition(":")
    if kind.lower() == "memory":
        return "memory:" + memory_id(key, field)
    if kind.lower() == "episode":
        return "episode:" + episode_id(key, field)
    try:
        return f"memory:{uuid.UUID(raw)}"
    except ValueError:
        return "episode:" + episode_id(raw, field)


def integer(field: str, value: Any, limits: Range) -> int:
    """An integer within ``limits`` (its default when ``None``)."""
    low, high = limits.low, limits.high
    if value is None:
        return int(limits.default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an integer from {low} to {high}")
    if not low <= value <= high:
        raise InvalidInput(f"{field} must be from {low} to {high}, got {value}")
    return value


def number(field: str, value: Any, limits: Range) -> float:
    """A number within ``limits`` (its default when ``None``)."""
    low, high = limits.low, limits.high
    if value is None:
        return float(limits.default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{field} must be a number from {low} to {high}")
    if not low <= value <= high:
        raise InvalidInput(f"{field} must be from {low} to {high}, got {value}")
    return float(value)


def choice(field: str, value: Any, allowed: tuple[S, ...]) -> S | None:
    """One of ``allowed``, or ``None``."""
    if value is None:
        return None
    for option in allowed:
        if value == option:
            return option
    raise InvalidInput(f"{field} must be one of {', '.join(allowed)}")


def episode_status(value: Any, field: str = "status") -> EpisodeStatus | None:
    return choice(field, value, EPISODE_STATUSES)


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


def memory_time(
    field: str,
    value: Any,
    now: datetime | None = None,
    *,
    advice: str = "Send when it was learned, or leave {field} out to use the current time.",
) -> datetime | None:
    """A memory's ``created_at``: a :func:`timestamp` at most ``MAX_FUTURE_SECONDS`` ahead of
    ``now`` (the wall clock). Episodes live in their memories' time, so a memory dated in the
    future would close every episode that is still active. ``advice`` ends the message (an
    import line cannot leave the field out)."""
    moment = timestamp(field, value)
    if moment is None:
        return None
    now = now or utc_now()
    ahead = moment - now
    if ahead > timedelta(seconds=MAX_FUTURE_SECONDS):
        raise InvalidInput(
            f"{field} {to_iso(moment)} is {_duration(ahead)} in the future (server time "
            f"{to_iso(now.replace(microsecond=0))}); a memory's time may be at most "
            f"{MAX_FUTURE_SECONDS // 60} minutes ahead. " + advice.format(field=field)
        )
    return moment


def _duration(span: timedelta) -> str:
    """``3 days``, ``5 minutes 1 second``: the largest unit and the next one, for messages."""
    left = max(0, int(span.total_seconds()))
    counts = []
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        count, left = divmod(left, size)
        counts.append((count, unit))
    first = next((i for i, (count, _) in enumerate(counts) if count), len(counts) - 1)
    shown = [(c, u) for c, u in counts[first : first + 2] if c] or [(0, "second")]
    return " ".join(f"{c} {u}{'' if c == 1 else 's'}" for c, u in shown)


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


def memory_ids(
    value: Any, field: str = "memory_ids", *, max_items: int = MAX_MEMORY_IDS
) -> list[str]:
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
    """An episode id in canonical form: trimmed, lower-case, without an ``episode:`` prefix.

    Any id made of letters, digits, ``-``, ``_`` and ``:`` is well formed (one that names no
    episode is the engine's 404); other characters, or more than
    :data:`~tribalmemory.shapes.MAX_EPISODE_ID_CHARS`, are invalid input.
    """
    hint = "an episode id like 'ep-1a2b3c4d5e6f'"
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be {hint} (a string)")
    raw = value.strip()
    if len(raw) > MAX_EPISODE_ID_CHARS:
        raise InvalidInput(
            f"{field} has {len(raw)} characters; {hint} has at most {MAX_EPISODE_ID_CHARS}"
        )
    if not EPISODE_ID.match(raw):
        raise InvalidInput(
            f"{field} {raw[:80]!r} is not {hint}: only letters, digits, '-', '_' and ':'"
        )
    canonical = raw.lower().removeprefix(EPISODE_PREFIX)
    if not canonical:
        raise InvalidInput(f"{field} must be {hint}")
    return canonical


def metadata_patch(value: Any, field: str = "metadata") -> dict[str, Any] | None:
    """Metadata fields to set (null removes one): a JSON object of at most
    :data:`~tribalmemory.shapes.MAX_METADATA_FIELDS` fields with well-formed names."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidInput(f"{field} must be a JSON object of fields to set (null removes one)")
    if len(value) > MAX_METADATA_FIELDS:
        raise InvalidInput(f"{field}: at most {MAX_METADATA_FIELDS} fields, got {len(value)}")
    bad = [k for k in value if not METADATA_KEY.match(k)]
    if bad:
        raise InvalidInput(
            f"{field}: field name {bad[0][:80]!r} is not allowed: a letter, then letters, "
            "digits, '_' or '-' (at most 64)"
        )
    size = len(json.dumps(value, ensure_ascii=False))
    if size > MAX_METADATA_CHARS:
        raise PayloadTooLarge(
            f"{field} has {size} characters as JSON; the limit is {MAX_METADATA_CHARS}"
        )
    return value


def project(value: Any, field: str = "project") -> str:
    """A write's project name, lower-cased (``default`` when ``None``); a malformed one is
    BadName, and so is ``*`` (all projects: only a read may name it, see :func:`scope`)."""
    if value is None:
        return projects.DEFAULT_PROJECT
    if not isinstance(value, str):
        raise BadName(f"{field} must be a string: a project name such as 'billing-api'")
    try:
        return projects.normalise(value)
    except ValueError as exc:
        raise BadName(f"{field}: {exc}") from None


def scope(value: Any, field: str = "project") -> str | None:
    """A read's project: one name, lower-cased (``default`` when ``None``), or None for
    ``*`` (:data:`~tribalmemory.projects.ALL_PROJECTS`: every project)."""
    return None if projects.is_all(value) else project(value, field)


def project_filter(value: Any, field: str = "project") -> str | None:
    """A project to scope a read to, or None (every project) when not given or ``*``."""
    return None if value is None else scope(value, field)


def time_range(
    start_field: str, start: datetime | None, end_field: str, end: datetime | None
) -> None:
    """Refuse a range that ends before it starts (it could only answer nothing)."""
    if start is not None and end is not None and start > end:
        raise InvalidInput(f"{start_field} must not be after {end_field}")
