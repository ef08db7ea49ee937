"""Recall with episodes does not displace evidence (issue 39): the ranking rules as pure
functions, and on the real engine a lesson never beside the memory it was read from and a
summary shown only when it carries more of the query than its members."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from helpers_runtime import engine_runtime, settle  # noqa: F401

from tribalmemory.config import config_from_dict
from tribalmemory.episodes import gist
from tribalmemory.errors import InvalidInput
from tribalmemory.models import Memory, SourceType
from tribalmemory.runtime import Runtime, start_runtime
from tribalmemory.service import ranking
from tribalmemory.service.ranking import Kind, Ranked
from tribalmemory.timeutil import utc_now

# -- the rules --------------------------------------------------------------------------------


def test_a_derived_memory_is_left_out_when_its_source_is_in_the_pool() -> None:
    lesson = Ranked("l", 0.9, Kind.DERIVED, "ep-1", sources=("m1", "m2"))
    other = Ranked("d", 0.8, Kind.DERIVED, "ep-1", sources=("m9",))
    pool = [lesson, other, Ranked("m2", 0.5, episode_id="ep-1")]
    assert [c.id for c in ranking.admitted(pool)] == ["d", "m2"]


def test_a_summary_is_kept_only_when_it_beats_its_best_member_by_the_margin() -> None:
    def pool(summary_score: float) -> list[Ranked]:
        return [
            Ranked("s", summary_score, Kind.SUMMARY, "ep-1"),
            Ranked("a", 0.60, episode_id="ep-1"),
            Ranked("b", 0.40, episode_id="ep-1"),
            Ranked("x", 0.55, episode_id="ep-2"),
        ]

    best = 0.60
    assert "s" not in {c.id for c in ranking.admitted(pool(best))}
    assert "s" not in {c.id for c in ranking.admitted(pool(best + ranking.SUMMARY_MARGIN / 2))}
    assert "s" in {c.id for c in ranking.admitted(pool(best + ranking.SUMMARY_MARGIN))}


def test_a_summary_far_below_the_closest_memory_is_left_out_however_weak_its_members() -> None:
    # a thread the query barely touches: its summary mixes the members and beats them all,
    # yet a memory of another thread answers far better
    def pool(summary_score: float) -> list[Ranked]:
        return [
            Ranked("x", 0.80, episode_id="ep-2"),
            Ranked("s", summary_score, Kind.SUMMARY, "ep-1"),
            Ranked("a", 0.30, episode_id="ep-1"),
        ]

    closest = 0.80
    assert "s" not in {c.id for c in ranking.admitted(pool(0.60))}  # beats "a" by 0.3
    below = closest - ranking.SUMMARY_REACH
    assert "s" not in {c.id for c in ranking.admitted(pool(below - 0.01))}
    assert "s" in {c.id for c in ranking.admitted(pool(below))}


def test_a_summary_none_of_whose_members_was_found_stands_for_nothing() -> None:
    pool = [Ranked("s", 0.9, Kind.SUMMARY, "ep-1"), Ranked("x", 0.5, episode_id="ep-2")]
    assert [c.id for c in ranking.admitted(pool)] == ["x"]
    assert [c.id for c in ranking.admitted(pool, orphans=True)] == ["s", "x"]
    summaries_only = [pool[0], Ranked("t", 0.4, Kind.SUMMARY, "ep-2")]
    assert ranking.admitted(summaries_only) == summaries_only  # source_types: summaries


def random_pool(rng: random.Random, size: int = 60) -> list[Ranked]:
    """A pool in fused order of memories of a few episodes, their summaries and lessons."""
    out = []
    for i in range(size):
        kind = rng.choice([Kind.MEMORY] * 4 + [Kind.SUMMARY, Kind.DERIVED])
        sources = tuple(f"c{rng.randrange(size)}" for _ in range(2)) if kind is Kind.DERIVED else ()
        score = round(rng.choice([0.3, 0.5, 0.5, 0.7]) + rng.choice([0.0, 0.02, 0.1]), 6)
        out.append(Ranked(f"c{i}", score, kind, f"ep-{rng.randrange(6)}", sources))
    return out


def test_what_is_kept_does_not_depend_on_the_limit_and_ties_are_broken_the_same_way() -> None:
    rng = random.Random(7)
    for _ in range(200):
        found = random_pool(rng, 80)  # what the search would rank, best first
        for k in range(1, ranking.CANDIDATE_POOL // 2):
            top_k = ranking.admitted(found[: ranking.pool_size(k)])[:k]
            top_next = ranking.admitted(found[: ranking.pool_size(k + 1)])[: k + 1]
            assert len(top_k) == k and top_next[:k] == top_k
        pool = found[: ranking.CANDIDATE_POOL]
        kept = ranking.admitted(pool)
        shuffled = rng.sample(pool, len(pool))  # the rules keep the pool's own order
        assert sorted(ranking.admitted(shuffled), key=pool.index) == kept
        ids = {c.id for c in kept if c.kind is Kind.MEMORY}
        for c in kept:  # never a derived memory beside what it was read from
            assert c.kind is not Kind.DERIVED or not ids.intersection(c.sources)


def test_engine_written_memories_come_beside_the_first_written_ones_never_in_their_place() -> None:
    rng = random.Random(11)
    for _ in range(200):
        pool = random_pool(rng, 60)

        def engine(c: Ranked) -> bool:
            return c.kind is not Kind.MEMORY

        written = [c for c in pool if not engine(c)]
        previous: list[Ranked] = []
        for k in range(1, len(written) + 1):
            shown = ranking.beside_written(pool, k, engine)
            assert [c for c in shown if not engine(c)] == written[:k]  # the same as without them
            assert shown == pool[: pool.index(written[k - 1]) + 1]  # and what ranks among them
            assert shown[: len(previous)] == previous
            previous = shown


def test_the_pool_holds_the_limit_once_the_rules_have_left_some_out() -> None:
    assert ranking.pool_size(50) >= 2 * 50


# -- on the real engine -----------------------------------------------------------------------


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[Runtime]:
    config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": {"enabled": False}})
    runtime = await start_runtime(config)
    yield runtime
    await runtime.stop()


SOURCE = "Always run the billing-api schema migrations before deploying billing-api to prod."


async def test_a_lesson_is_not_shown_beside_the_memory_it_was_read_from(plain: Runtime) -> None:
    stored = await plain.api.remember(SOURCE)
    other = await plain.api.remember("The search-api deploy uses a blue-green switch on Fridays.")
    now = utc_now()
    lesson = Memory(
        id="6a0f9e2c-1b8e-5c1a-9d3e-0f2b7c4a1e55",
        content=f"Lesson (episode: billing deploys): {SOURCE}",
        source_type=SourceType.LESSON,
        source_instance="tribalmemory",
        tags=[],
        context=None,
        created_at=now,
        updated_at=now,
        metadata={"episode_id": "ep-0123456789ab", "memory_ids": [stored["memory_id"]]},
    )
    await plain.service.put_internal([lesson])
    found = await plain.api.recall("billing-api migrations before deploy", limit=5)
    ids = [r["memory_id"] for r in found["results"]]
    assert stored["memory_id"] in ids and lesson.id not in ids
    assert other["memory_id"] in ids  # the slot went to another memory
    await plain.api.forget(stored["memory_id"])
    alone = await plain.api.recall("billing-api migrations before deploy", limit=5)
    assert lesson.id in [r["memory_id"] for r in alone["results"]]  # its source is gone


THREAD = [
    "Refresh tokens rotate on every use; a reused refresh token revokes the whole token family.",
    "Two browser tabs call /auth/refresh at once and the second presents a rotated token.",
    "Fix for the multi-tab logout: accept the previous refresh token for a 10 second grace "
    "window after rotation.",
]


async def test_a_summary_is_shown_only_when_it_carries_more_than_its_members(
    engine_runtime: Any,  # noqa: F811
) -> None:
    rt = await engine_runtime()
    ids = [(await rt.api.remember(text, tags=["auth"]))["memory_id"] for text in THREAD]
    created = await rt.api.episode_create("Multi-tab logout", ids)
    await settle(rt)
    episode = (await rt.api.episode_get(created["episode_id"]))["episode"]
    summary = await rt.api.get_memory(episode["summary_memory_id"])

    async def shown(query: str) -> tuple[list[str], dict[str, float]]:
        found = (await rt.api.recall(query, limit=10))["results"]
        return [r["memory_id"] for r in found], {
            r["memory_id"]: r["similarity_score"] for r in found
        }

    # one member says it all: the summary repeats it among other lines, and stays out
    order, _ = await shown(THREAD[2])
    assert order[0] == ids[2] and summary["id"] not in order
    # the same summary is found on its own when its members are filtered out
    only = await rt.api.recall(THREAD[2], source_types=["episode_summary"])
    assert [r["memory_id"] for r in only["results"]] == [summary["id"]]
    # a question about the whole thread: the summary carries more of it than any member
    order, scores = await shown("why are users logged out with two tabs and how was it fixed")
    assert summary["id"] in order
    best_member = max(scores[i] for i in ids if i in scores)
    assert scores[summary["id"]] >= best_member + ranking.SUMMARY_MARGIN
    # beside the memories found, never in place of one: asked for three, the three members
    # (all the store's written memories) come with the summary
    question = "why are users logged out with two tabs and how was it fixed"
    three = await rt.api.recall(question, limit=3)
    found = [r["memory_id"] for r in three["results"]]
    assert sorted(found) == sorted([*ids, summary["id"]])


async def test_grouped_recall_lists_each_thread_once_with_its_results_best_first(
    engine_runtime: Any,  # noqa: F811
) -> None:
    rt = await engine_runtime()
    auth = [(await rt.api.remember(text, tags=["auth"]))["memory_id"] for text in THREAD]
    db = [
        (await rt.api.remember(text))["memory_id"]
        for text in (
            "Postgres migration: pgloader failed on three tables with zero dates.",
            "The MySQL to PostgreSQL cutover is scheduled for Saturday night.",
        )
    ]
    logout = (await rt.api.episode_create("Multi-tab logout", auth))["episode_id"]
    cutover = (await rt.api.episode_create("Postgres cutover", db))["episode_id"]
    await settle(rt)
    query = "refresh token rotation logs users out"
    flat = await rt.api.recall(query, limit=10)
    assert flat["episodes"] is None  # grouping is asked for
    found = await rt.api.recall(query, limit=10, group_by_episode=True)
    assert [r["memory_id"] for r in found["results"]] == [r["memory_id"] for r in flat["results"]]
    groups = found["episodes"]
    by_id = {g["episode_id"]: g for g in groups}
    assert groups[0]["episode_id"] == logout and groups[0]["title"] == "Multi-tab logout"
    if cutover in by_id:  # the other thread, when its memories made the top 10
        assert by_id[cutover]["title"] == "Postgres cutover"
    order = [r["memory_id"] for r in found["results"]]
    episode_of = {r["memory_id"]: r["memory"]["episode_id"] for r in found["results"]}
    for group in groups:
        members = group["memory_ids"]
        assert members == [m for m in order if episode_of[m] == group["episode_id"]]
        assert (
            group["similarity_score"]
            == found["results"][order.index(members[0])]["similarity_score"]
        )
    # every result of an episode is in exactly one group; results in no episode in none
    grouped = [m for g in groups for m in g["memory_ids"]]
    assert sorted(grouped) == sorted(m for m in order if episode_of[m] is not None)
    assert len({g["episode_id"] for g in groups}) == len(groups)
    with pytest.raises(InvalidInput, match="group_by_episode must be true or false"):
        await rt.api.recall(query, group_by_episode="yes")


async def test_recall_attaches_the_thread_of_its_best_results_in_a_line(
    engine_runtime: Any,  # noqa: F811
) -> None:
    rt = await engine_runtime()
    auth = [(await rt.api.remember(text, tags=["auth"]))["memory_id"] for text in THREAD]
    alone = (await rt.api.remember("Postgres cutover is scheduled for Saturday night."))[
        "memory_id"
    ]
    logout = (await rt.api.episode_create("Multi-tab logout", auth))["episode_id"]
    single = (await rt.api.episode_create("Postgres cutover", [alone]))["episode_id"]
    await settle(rt)
    summary = (await rt.api.episode_get(logout))["episode"]["summary"]
    assert summary  # the thread has a summary for its gist
    query = "refresh token rotation logs users out"
    found = await rt.api.recall(query, limit=3)
    assert {r["memory"]["episode_id"] for r in found["results"]} == {logout}
    [thread] = found["context"]  # one thread by default: the best result's
    assert thread["episode_id"] == logout and thread["title"] == "Multi-tab logout"
    assert thread["memory_count"] == len(THREAD)
    assert thread["gist"] and len(thread["title"]) + len(thread["gist"]) <= gist.GIST_CHARS
    assert not gist._HEADER.match(thread["gist"])  # what it is about, not its size and span
    assert (await rt.api.recall(query, limit=3, episode_context=0))["context"] == []
    # A thread of a single memory adds nothing to its result: not attached.
    cutover = await rt.api.recall("Postgres cutover Saturday", limit=1, episode_context=5)
    assert cutover["results"][0]["memory_id"] == alone
    assert single not in {t["episode_id"] for t in cutover["context"]}
    # A thread whose summary is a result is not repeated as context.
    with_summary = await rt.api.recall(query, limit=50, episode_context=5)
    shown = {r["memory_id"] for r in with_summary["results"]}
    summary_id = (await rt.api.episode_get(logout))["episode"]["summary_memory_id"]
    in_results = summary_id in shown
    assert (logout in {t["episode_id"] for t in with_summary["context"]}) is not in_results
    with pytest.raises(InvalidInput, match="episode_context"):
        await rt.api.recall(query, episode_context=6)


def test_a_gist_is_what_the_summary_says_past_its_size_line_within_the_budget() -> None:
    summary = (
        "3 memories, 2025-03-03 to 2025-03-08. Tags: auth.\n"
        "About: refresh token, rotation, tabs.\n"
        "- Users with two tabs open get logged out when the refresh token rotates."
    )
    line = gist.gist("Multi-tab logout", summary)
    assert line.startswith("About: refresh token, rotation, tabs. - Users with two tabs")
    assert len("Multi-tab logout") + len(line) <= gist.GIST_CHARS
    assert gist.gist("Multi-tab logout", summary, limit=60).endswith("…")
    assert gist.gist("A" * 150, summary) == ""  # no room beside a long title
    assert gist.gist("Title", "3 memories, 2025-03-03.") == ""  # nothing past the size line
    prose = "The team fixed logouts with two tabs by sharing the refresh token."
    assert gist.gist("Logout", prose) == prose  # an LLM's summary is kept as written


CACHE_NOTES = {
    "2023-01-12T10:00:00Z": "Cache decision: the product cache keeps entries for 10 minutes.",
    "2023-05-03T10:00:00Z": "We changed how long product pages stay cached: 2 minutes now.",
    "2023-09-20T10:00:00Z": "Cache decision: the session cache keeps entries for 30 minutes.",
}


async def test_a_period_the_query_names_puts_its_memories_first(plain: Runtime) -> None:
    ids = {
        when: (await plain.api.remember(text, created_at=when))["memory_id"]
        for when, text in CACHE_NOTES.items()
    }
    query = "cache decision on 3 May 2023"
    plain_words = await plain.api.recall(query, limit=3, query_dates=False)
    assert plain_words["period"] is None
    # By the words alone, the May note is not the best match: the test means something.
    assert plain_words["results"][0]["memory_id"] != ids["2023-05-03T10:00:00Z"]
    dated = await plain.api.recall(query, limit=3)
    assert [r["memory_id"] for r in dated["results"]][0] == ids["2023-05-03T10:00:00Z"]
    # The others follow in the order of their scores: nothing is dropped.
    assert {r["memory_id"] for r in dated["results"]} == set(ids.values())
    assert dated["period"] == {
        "text": "3 May 2023",
        "after": "2023-04-29T00:00:00Z",  # 4 days before the day
        "before": "2023-05-11T00:00:00Z",  # 7 days after its end
    }
    # An explicit time filter wins: the query's words name no period then.
    filtered = await plain.api.recall(query, limit=3, after="2023-01-01T00:00:00Z")
    assert filtered["period"] is None
    assert filtered["results"][0]["memory_id"] != ids["2023-05-03T10:00:00Z"]
