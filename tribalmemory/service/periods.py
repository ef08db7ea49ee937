"""The period a recall query names: "on 3 May 2023", "in December", "last week".

A question that names a period asks about what was remembered then: recall shows the
memories dated in it first (:func:`.ranking.in_period_first`), widened by
:data:`BEFORE_SLACK` and :data:`AFTER_SLACK` because a memory records when something was
said, which is often a few days after it happened (or before, for something planned).

Pure functions of the query and the current time. Understood (English, case-insensitive):

- a day: ``3 May 2023``, ``May 3, 2023``, ``2023-05-03``, ``3 May`` / ``May 3`` (the most
  recent one not in the future);
- a month: ``May 2023``, ``in May`` (the most recent May that has begun);
- a year: ``in 2023``, ``during 2023``;
- relative to now: ``today``, ``yesterday``, ``this week`` / ``month`` / ``year``,
  ``last week`` / ``month`` / ``year``.

A query with two such phrases names no single period and is left as it is. So are words
that only look like dates ("may" as a verb is not a month unless a day or year is beside it,
or ``in`` / ``during`` before it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

BEFORE_SLACK = timedelta(days=4)
"""How long before the period a memory may be dated and still be about it (a plan)."""
AFTER_SLACK = timedelta(days=7)
"""How long after the period a memory may be dated and still be about it ("last week I…")."""

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?<![\d:./-])(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_NO_YEAR = r"(?!,?\s+\d{3,4}\b)"  # a year outside 1900-2099 is not this year's day

# Most specific first: a day before a month before a year.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        ("day", rf"\b{_YEAR}-(?P<month_number>[01]\d)-(?P<day>[0-3]\d)\b"),
        ("day", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b"),
        ("day", rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b"),
        ("day", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?![\w-]){_NO_YEAR}"),
        ("day", rf"\b{_MONTH}\s+{_DAY}(?![\w:.-]){_NO_YEAR}"),
        ("month", rf"\b{_MONTH},?\s+{_YEAR}\b"),
        ("month", rf"\b(?:in|during|since|throughout)\s+(?:early\s+|late\s+|mid-?)?{_MONTH}\b"),
        ("year", rf"\b(?:in|during|throughout)\s+{_YEAR}\b"),
        ("relative", r"\b(?P<relative>today|yesterday|(?:this|last)\s+(?:week|month|year))\b"),
    )
)


@dataclass(frozen=True)
class Period:
    """``[start, end)`` in UTC, and the words of the query that name it."""

    start: datetime
    end: datetime
    text: str

    def window(self) -> tuple[datetime, datetime]:
        """The period widened by the slack: memories dated in it are about the period."""
        return self.start - BEFORE_SLACK, self.end + AFTER_SLACK


def named_period(query: str, now: datetime) -> Period | None:
    """The one period ``query`` names (relative words counted from ``now``), or None."""
    found: list[Period] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(query):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue  # part of a more specific phrase already read
            period = _period(kind, match, now.astimezone(UTC))
            if period is not None:
                taken.append(span)
                found.append(period)
    return found[0] if len(found) == 1 else None


def _period(kind: str, match: re.Match[str], now: datetime) -> Period | None:
    groups = match.groupdict()
    text = match.group(0).strip()
    if kind == "relative":
        return _relative(groups["relative"].lower().split(), now, text)
    month = int(groups["month_number"]) if groups.get("month_number") else None
    if groups.get("month"):
        month = MONTHS[groups["month"].lower()]
    year = int(groups["year"]) if groups.get("year") else None
    try:
        if kind == "day":
            assert month is not None
            day = int(groups["day"])
            start = _latest(lambda y: datetime(y, month, day, tzinfo=UTC), year, now)
            return Period(start, start + timedelta(days=1), text)
        if kind == "month":
            assert month is not None
            start = _latest(lambda y: datetime(y, month, 1, tzinfo=UTC), year, now)
            return Period(start, _next_month(start), text)
        assert year is not None
        return Period(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), text)
    except ValueError:  # "31 February": not a date
        return None


def _latest(build: Callable[[int], datetime], year: int | None, now: datetime) -> datetime:
    """The date ``build(year)``; without a year, the most recent one that has begun."""
    if year is not None:
        return build(year)
    this_year = build(now.year)
    return this_year if this_year <= now else build(now.year - 1)


def _next_month(start: datetime) -> datetime:
    return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)


def _relative(words: list[str], now: datetime, text: str) -> Period:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if words == ["today"]:
        return Period(today, today + timedelta(days=1), text)
    if words == ["yesterday"]:
        return Period(today - timedelta(days=1), today, text)
    which, unit = words
    if unit == "week":
        start = today - timedelta(days=today.weekday())
        start = start - timedelta(days=7) if which == "last" else start
        return Period(start, start + timedelta(days=7), text)
    if unit == "month":
        start = today.replace(day=1)
        if which == "last":
            start = (start - timedelta(days=1)).replace(day=1)
        return Period(start, _next_month(start), text)
    start = today.replace(month=1, day=1)
    if which == "last":
        start = start.replace(year=start.year - 1)
    return Period(start, start.replace(year=start.year + 1), text)
