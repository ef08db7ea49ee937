"""UTC timestamps, always timezone-aware, written in ISO 8601 with a ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def to_iso(moment: datetime) -> str:
    """``2025-03-03T09:26:32.123456Z``: UTC, ``Z`` suffix, microseconds only when non-zero."""
    moment = ensure_utc(moment)
    text = moment.replace(tzinfo=None).isoformat()
    return text + "Z"


def parse_iso(text: str) -> datetime:
    """Parse ISO 8601; a time without a zone is taken as UTC. Raises ``ValueError``."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("expected an ISO 8601 timestamp such as 2025-03-03T09:26:32Z")
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError(
            f"{text!r} is not an ISO 8601 timestamp (example: 2025-03-03T09:26:32Z)"
        ) from None
    try:
        return ensure_utc(moment)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00 is in year 0 in UTC
        raise ValueError(
            f"{text[:60]!r} is outside the supported range "
            "(0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z in UTC)"
        ) from None


def ensure_utc(moment: datetime) -> datetime:
    """Naive datetimes are UTC; aware ones are converted to UTC."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def to_epoch(moment: datetime) -> float:
    """Seconds since the epoch (for range filters and sorting)."""
    return ensure_utc(moment).timestamp()


def from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
