"""Short replies: a memory that says too little to be placed by its words ("ok, thanks") continues
the thread its author wrote in last (tribalmemory.episodes.detector.own_thread)."""

from __future__ import annotations

from datetime import timedelta

from detector_fixtures import T0, said
from helpers_runtime import settle

from tribalmemory.episodes.detector import (
    DetectorContext,
    add_member,
    build_episode,
    content_size,
    evidence,
    new_episode,
    own_thread,
)
from tribalmemory.timeutil import to_iso

# ---------------------------------------------------------------- pure


def test_a_memory_says_little_up_to_three_words_not_counting_its_author() -> None:
    assert said("m", "somebody-with-a-long-name", 0, "ok, thanks!").says_little
    assert said("m", "x", 0, "did that too").says_little  # did, that, too
    assert not said("m", "x", 0, "yes, I did that too").says_little  # yes, did, that, too
    long = said("m", "x", 0, "the replica lags behind after the vacuum")
    assert not long.says_little and long.words == 7  # "the" twice


def test_words_are_counted_in_any_script() -> None:
    """A memory in Russian or Chinese is not short because it has no Latin letters: were it,
    every memory of such a stream would lean to its author's last episode."""
    assert content_size("Развёртывание на стейджинг упало из-за миграции") == 4
    assert content_size("Le déploiement a échoué") == 2  # déploiement, échoué
    assert content_size("数据库副本延迟了二十分钟") == 6  # a word per two characters
    assert content_size("好的，谢谢") == 2
    assert content_size("port 8080, ok") == 1  # numbers and two-letter words say nothing
    assert not said("m", "x", 0, "Развёртывание на стейджинг упало из-за миграции").says_little


def test_own_thread_is_the_episode_where_the_author_wrote_last() -> None:
    a1 = said("a1", "ana", 0, "replication lag on the standby keeps growing")
    b1 = said("b1", "ben", 1, "the flexbox layout breaks on narrow screens")
    a2 = said("a2", "ana", 2, "it got worse after the nightly vacuum ran")
    c1 = said("c1", "cho", 3, "which browser shows the broken layout")
    thread_a = build_episode("A", [a1, b1])  # ana wrote here at minute 0
    thread_b = build_episode("B", [a2, c1])  # and here at minute 2: her latest
    reply = said("r", "ana", 4, "ok, thanks!")
    assert own_thread(reply, [thread_a, thread_b]) == "B"
    assert thread_b.source_last == {"ana": a2.created_at, "cho": c1.created_at}
    assert own_thread(said("r", "dev", 4, "ok"), [thread_a, thread_b]) is None
    said_enough = said("r", "ana", 4, "the standby caught up once the vacuum finished")
    assert own_thread(said_enough, [thread_a, thread_b]) is None
    earlier = said("r", "ana", 1, "ok")  # imported out of order: before her minute-2 message
    assert own_thread(earlier, [thread_a, thread_b]) == "A"


def test_source_last_is_the_same_built_at_once_or_member_by_member() -> None:
    members = [said(f"m{k}", f"s{k % 3}", 10 * k, f"word{k} shared") for k in range(7)]
    grown = new_episode("E", members[0])
    for m in members[1:]:
        grown = add_member(grown, m)
    rebuilt = build_episode("E", list(reversed(members)))
    assert grown.source_last == rebuilt.source_last
    assert rebuilt.source_last == {
        "s0": members[6].created_at,
        "s1": members[4].created_at,
        "s2": members[5].created_at,
    }


def test_the_own_thread_never_lowers_the_score() -> None:
    """The model's ``own_thread`` feature is monotone (benchmarks/fit_detector.py): being
    where a short reply's author wrote last never lowers P(joins), whatever the reply's
    similarity, the thread's authors or the stream's pace."""
    contexts = (DetectorContext(), DetectorContext(doc_count=50, gaps=[60.0] * 10))
    alone = [said("a1", "ana", 0, "replication lag on the standby")]
    shared = [*alone, said("b1", "bob", 0.5, "is the standby on ssd", axis=2)]
    for context in contexts:
        for members in (alone, shared):
            episode = build_episode("A", members)
            for axis in (0, 1):
                reply = said("r", "ana", 1, "ok", axis=axis)
                plain = evidence(reply, episode, context)
                own = evidence(reply, episode, context, own_thread=True)
                assert own.score >= plain.score


# ---------------------------------------------------------------- through the engine

# Two threads interleaved minute by minute: ana and ben on a database, cho and dev on a web page.
DATABASE = [
    ("ana", "The Postgres standby replica lags twenty minutes behind the primary since Monday."),
    ("ben", "Check whether the WAL sender on the primary is saturating its network link."),
    ("ana", "The WAL sender shows steady throughput, but replay on the standby is slow."),
]
WEB_PAGE = [
    ("cho", "The checkout page renders its price column off screen on narrow phones."),
    ("dev", "The flexbox container has a fixed min-width; the price column overflows."),
    ("cho", "Removing the min-width fixes phones but breaks the tablet layout instead."),
]


async def remember_at(rt, source: str, text: str, minutes: float) -> str:  # noqa: ANN001
    result = await rt.api.remember(
        text, source_instance=source, created_at=to_iso(T0 + timedelta(minutes=minutes))
    )
    assert result["success"], result
    return result["memory_id"]


async def episode_of(rt, memory_id: str) -> str | None:  # noqa: ANN001
    return (await rt.api.get_memory(memory_id))["episode_id"]


async def test_a_short_reply_joins_its_authors_thread_not_the_latest_one(engine_runtime) -> None:
    rt = await engine_runtime()
    database, web_page = [], []
    for k in range(3):
        database.append(await remember_at(rt, *DATABASE[k], 2 * k))
        web_page.append(await remember_at(rt, *WEB_PAGE[k], 2 * k + 1))
    await settle(rt)
    db_episode = await episode_of(rt, database[-1])
    web_episode = await episode_of(rt, web_page[-1])
    assert db_episode and web_episode and db_episode != web_episode

    # ana answers "ok" right after cho's message: the web page is the latest thread, hers is not.
    reply = await remember_at(rt, "ana", "ok, will try that", 6.5)
    await settle(rt)
    assert await episode_of(rt, reply) == db_episode
    # The same words from cho continue cho's thread.
    other = await remember_at(rt, "cho", "ok, makes sense", 7)
    await settle(rt)
    assert await episode_of(rt, other) == web_episode


async def test_a_short_memory_and_a_lone_one_of_its_author_make_no_episode(
    engine_runtime,
) -> None:
    """The rule extends a thread; two memories that share only their author stay apart."""
    rt = await engine_runtime()
    first = await remember_at(rt, "ana", "Billing tests need the fixtures from make seed.", 0)
    second = await remember_at(rt, "ana", "Lunch is at noon.", 1)
    await settle(rt)
    assert await episode_of(rt, first) is None
    assert await episode_of(rt, second) is None
