"""The period a recall query names (pure functions of the query and the time)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tribalmemory.service.periods import AFTER_SLACK, BEFORE_SLACK, named_period
from tribalmemory.service.ranking import Ranked, in_period_first

NOW = datetime(2026, 11, 28, 15, 30, tzinfo=UTC)  # a Saturday


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end", "text"),
    [
        ("Who came to dinner on May 3, 2023?", day(2023, 5, 3), day(2023, 5, 4), "May 3, 2023"),
        ("the goodbye on 3 June, 2023", day(2023, 6, 3), day(2023, 6, 4), "3 June, 2023"),
        ("what happened on 2023-05-07?", day(2023, 5, 7), day(2023, 5, 8), "2023-05-07"),
        ("the outage on the 2nd of June", day(2026, 6, 2), day(2026, 6, 3), "2nd of June"),
        ("workouts started in December 2023", day(2023, 12, 1), day(2024, 1, 1), "December 2023"),
        ("what we decided in March", day(2026, 3, 1), day(2026, 4, 1), "in March"),
        ("what we decided in December", day(2025, 12, 1), day(2026, 1, 1), "in December"),
        ("migrations during 2024", day(2024, 1, 1), day(2025, 1, 1), "during 2024"),
        ("deploys yesterday", day(2026, 11, 27), day(2026, 11, 28), "yesterday"),
        ("incidents last week", day(2026, 11, 16), day(2026, 11, 23), "last week"),
        ("spend this month", day(2026, 11, 1), day(2026, 12, 1), "this month"),
        ("releases last year", day(2025, 1, 1), day(2026, 1, 1), "last year"),
        ("standup at 10:30 May 4", day(2026, 5, 4), day(2026, 5, 5), "May 4"),
    ],
)
def test_a_named_period(query: str, start: datetime, end: datetime, text: str) -> None:
    period = named_period(query, NOW)
    assert period is not None
    assert (period.start, period.end, period.text) == (start, end, text)


@pytest.mark.parametrize(
    "query",
    [
        "may I ask about the lease table",  # "may" as a verb
        "release 2.3 notes for python 3.11",  # version numbers
        "the 31 February thing",  # no such day
        "between 3 May 2023 and 9 May 2023",  # two periods: none single
        "how do we rotate the refresh tokens",
        "what happened on 5 March 1899",  # a year the rules do not read: not this year's day
        "the launch on March 5, 2150",
    ],
)
def test_no_period(query: str) -> None:
    assert named_period(query, NOW) is None


def test_the_window_widens_the_period_by_the_slack() -> None:
    period = named_period("on 3 May 2023", NOW)
    assert period is not None
    assert period.window() == (day(2023, 5, 3) - BEFORE_SLACK, day(2023, 5, 4) + AFTER_SLACK)


def at(when: datetime) -> float:
    return when.timestamp()


def test_memories_dated_in_the_period_come_first_in_their_order() -> None:
    pool = [
        Ranked("a", 0.9, created_at=at(day(2023, 1, 2))),
        Ranked("b", 0.8, created_at=at(day(2023, 5, 3))),
        Ranked("c", 0.7),
        Ranked("d", 0.6, created_at=at(day(2023, 5, 9))),
    ]
    start, end = at(day(2023, 5, 1)), at(day(2023, 6, 1))
    assert [c.id for c in in_period_first(pool, start, end)] == ["b", "d", "a", "c"]


def test_a_period_nothing_is_dated_in_leaves_the_pool_as_it_is() -> None:
    pool = [Ranked("a", 0.9, created_at=at(day(2023, 1, 2))), Ranked("b", 0.8)]
    assert in_period_first(pool, at(day(2024, 1, 1)), at(day(2025, 1, 1))) == pool
