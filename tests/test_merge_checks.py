"""Two episodes that are one thread are merged when the LLM says so (``episodes.merge_checks``).

Through the real engine, model and litellm client against the fake LLM server. Reviews are off
(``llm_doubt_share`` 0), so the only LLM calls of the detector are merge checks. The auth and
database notes form two episodes by embeddings; the scripted LLM decides whether they are one
thread, which is what is tested: when a check is asked, what it shows, and what its answer does.
"""

from __future__ import annotations

from fakellm import Recorded, Reply, default_reply, merge_checks, merges, new_memories
from test_episodes_compose import runtime_factory  # noqa: F401
from test_episodes_engine import AUTH, DB, remember, settle

SETTINGS = {
    "detector_strategy": "hybrid",
    "llm_doubt_share": 0.0,
    "classify_calls_per_memory": 1.0,
    "classify_batch_wait_seconds": 0,
}


async def two_threads(rt) -> tuple[list[str], list[str]]:  # noqa: ANN001
    """Three auth notes, then four database notes (the fourth reaches the check size, 4)."""
    auth = [(await remember(rt, text, 3, 9 + i))["memory_id"] for i, text in enumerate(AUTH[:3])]
    db = [(await remember(rt, text, 3, 12 + i))["memory_id"] for i, text in enumerate(DB)]
    await settle(rt)
    return auth, db


async def episode_of(rt, memory_id: str) -> str:  # noqa: ANN001
    found = (await rt.api.get_memory(memory_id))["episode_id"]
    assert found is not None
    return found


async def test_an_episode_the_llm_finds_to_be_one_thread_with_another_is_merged(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    rt = await runtime_factory(merge_checks=True, **SETTINGS)
    asked: list[list[str]] = []

    def answer(request: Recorded) -> Reply:
        if request.purpose != "merge":
            return default_reply(request)
        checked = merge_checks(request.text)
        asked.append(checked)
        return Reply.json(merges(*((e, auth_episode) for e in checked)))

    fake_llm_env.responder = answer
    auth_episode = ""
    auth = [(await remember(rt, text, 3, 9 + i))["memory_id"] for i, text in enumerate(AUTH[:3])]
    auth_episode = await episode_of(rt, auth[0])
    await rt.api.memory_used(auth[0])  # access statistics of the memory and of its episode
    assert auth_episode in rt.service.access.get([auth_episode])
    db = [(await remember(rt, text, 3, 12 + i))["memory_id"] for i, text in enumerate(DB)]
    await settle(rt)
    db_episode_before = await episode_of(rt, db[0])
    assert asked == [[db_episode_before]]  # checked once, when it reached 4 members
    [call] = fake_llm_env.by_purpose("merge")
    assert f'<episode id="{auth_episode}">' in call.text  # the auth episode was a candidate
    # the larger episode (4 database notes) keeps its id; the auth notes moved into it
    for memory_id in auth + db:
        assert await episode_of(rt, memory_id) == db_episode_before
    got = await rt.api.episode_get(db_episode_before)
    assert got["episode"]["memory_count"] == 7
    merged = [h for h in got["history"] if h["action"] == "merge"]
    assert [(h["actor"], h["details"]["absorbed"]) for h in merged] == [("detector", auth_episode)]
    listed = [e["id"] for e in (await rt.api.episodes_list())["episodes"]]
    assert listed == [db_episode_before]
    # no orphan summary: the absorbed episode's summary memory is gone with it
    found = await rt.api.recall("refresh token logout", limit=50, source_types=["episode_summary"])
    assert len(found["results"]) <= 1
    health = rt.api.health()["episodes"]
    assert (health["classify_calls"], health["merge_waiting"]) == (1, 0)
    assert rt.service.access.get([auth_episode]) == {}  # merged away: its statistics go too


async def test_a_none_answer_keeps_both_episodes(runtime_factory, fake_llm_env) -> None:  # noqa: F811
    rt = await runtime_factory(merge_checks=True, **SETTINGS)
    auth, db = await two_threads(rt)  # the fake's default answer is "none" for every check
    assert len(fake_llm_env.by_purpose("merge")) == 1
    assert await episode_of(rt, auth[0]) != await episode_of(rt, db[0])
    assert len((await rt.api.episodes_list())["episodes"]) == 2


async def test_merge_checks_are_off_by_default(runtime_factory, fake_llm_env) -> None:  # noqa: F811
    rt = await runtime_factory(**SETTINGS)
    await two_threads(rt)
    assert fake_llm_env.by_purpose("merge") == []
    assert rt.api.health()["episodes"]["merge_waiting"] == 0


async def test_an_episode_the_user_edited_is_never_merged_by_the_detector(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """The user moved a note into the auth episode: that episode is the user's, so it is not
    offered as a candidate, and the check that has no candidate left asks nothing."""
    rt = await runtime_factory(merge_checks=True, **SETTINGS)
    fake_llm_env.responder = lambda request: (
        Reply.json(merges(*((e, None) for e in merge_checks(request.text))))
        if request.purpose == "merge"
        else default_reply(request)
    )
    auth = [(await remember(rt, text, 3, 9 + i))["memory_id"] for i, text in enumerate(AUTH[:3])]
    auth_episode = await episode_of(rt, auth[0])
    extra = (await remember(rt, "Note: the grace window is configurable.", 3, 11))["memory_id"]
    await rt.api.episode_add(auth_episode, extra)
    db = [(await remember(rt, text, 3, 12 + i))["memory_id"] for i, text in enumerate(DB)]
    await settle(rt)
    assert fake_llm_env.by_purpose("merge") == []
    assert await episode_of(rt, auth[0]) == auth_episode != await episode_of(rt, db[0])


async def test_llm_down_leaves_the_episodes_as_they_are(runtime_factory, fake_llm_env) -> None:  # noqa: F811
    rt = await runtime_factory(merge_checks=True, **SETTINGS)
    fake_llm_env.responder = lambda request: (
        Reply.error(500, "down") if request.purpose == "merge" else default_reply(request)
    )
    auth, db = await two_threads(rt)
    assert fake_llm_env.by_purpose("merge")  # it was asked (and retried)
    assert await episode_of(rt, auth[0]) != await episode_of(rt, db[0])
    assert rt.api.health()["episodes"]["merge_waiting"] == 0  # the check is over, not stuck


def test_a_check_is_wanted_when_growth_reaches_a_check_size() -> None:
    from tribalmemory.episodes.consolidation import wants_check

    assert [n for n in range(1, 40) if wants_check(n - 1, n)] == [4, 8]
    assert wants_check(3, 5) and not wants_check(4, 7)  # a jump over a size counts once


def test_merge_candidates_rank_by_direction_and_shared_rare_terms() -> None:
    import numpy as np

    from tribalmemory.episodes.detector import (
        DetectorContext,
        MemoryFeatures,
        merge_candidates,
        new_episode,
        update_context,
    )
    from tribalmemory.timeutil import parse_iso

    at = parse_iso("2025-03-03T10:00:00Z")

    def memory(id: str, vector: list[float], text: str) -> MemoryFeatures:
        return MemoryFeatures.from_text(id, np.array(vector), text, created_at=at)

    context = DetectorContext()
    base = memory("a", [1, 0, 0], "pgloader cutover saturday")
    same_words = memory("b", [0, 1, 0], "pgloader cutover plan")  # orthogonal, shares words
    near = memory("c", [0.9, 0.1, 0], "unrelated words here")  # close direction only
    far = memory("d", [0, 0, 1], "nothing shared")
    for m in (base, same_words, near, far):
        update_context(context, m)
    episodes = [new_episode(m.id, m) for m in (same_words, near, far)]
    ranked = merge_candidates(new_episode("a", base), episodes, context, k=2)
    assert [e.id for e in ranked] == ["c", "b"]  # cosine ~0.99 beats overlap ~0.67 alone


async def test_a_waiting_check_rides_along_in_the_next_review_call(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """A check waits (up to classify_batch_wait_seconds) for a review call to carry it: no
    call of its own, and the review call's answer merges the two episodes."""
    rt = await runtime_factory(
        merge_checks=True,
        **{**SETTINGS, "classify_batch_wait_seconds": 3600, "classify_batch_size": 1},
    )
    auth_episode = ""

    def answer(request: Recorded) -> Reply:
        if request.purpose != "classify":
            return default_reply(request)
        decisions = [{"memory_id": m, "action": "none"} for m, _ in new_memories(request.text)]
        checked = merge_checks(request.text)
        return Reply.json({"decisions": decisions, **merges(*((e, auth_episode) for e in checked))})

    fake_llm_env.responder = answer
    auth = [(await remember(rt, text, 3, 9 + i))["memory_id"] for i, text in enumerate(AUTH[:3])]
    auth_episode = await episode_of(rt, auth[0])
    db = [(await remember(rt, text, 3, 12 + i))["memory_id"] for i, text in enumerate(DB)]
    assert rt.api.health()["episodes"]["merge_waiting"] == 1  # waiting for a review call
    rt.episodes.engine.state.settings.llm_doubt_share = 1.0  # the next memory is reviewed
    await remember(rt, "Lunch order for the team offsite: pizza.", 3, 17)
    # run what is due (the review, its batch full); the check itself is not due for an hour
    assert await rt.episodes.worker.drain(30, due_only=True)
    assert fake_llm_env.by_purpose("merge") == []  # no call of its own
    [call] = fake_llm_env.by_purpose("classify")
    assert merge_checks(call.text) == [await episode_of(rt, db[0])]
    assert await episode_of(rt, auth[0]) == await episode_of(rt, db[0])
    assert rt.api.health()["episodes"]["merge_waiting"] == 0


def test_representatives_are_the_members_nearest_the_centroid_in_their_order() -> None:
    import numpy as np

    from tribalmemory.episodes.detector import representatives

    core = [(f"m{i}", np.array([1.0, 0.1 * i, 0.0])) for i in range(4)]
    drifted = [("late", np.array([0.0, 0.0, 1.0]))]  # the latest member, off the thread
    assert representatives(core + drifted, 4) == ["m0", "m1", "m2", "m3"]
    assert representatives(drifted + core, 2) == ["m1", "m2"]  # the two nearest, in order
    assert representatives(core[:2], 3) == ["m0", "m1"]  # fewer than k: all of them


async def test_a_check_that_cannot_be_prepared_waits_for_the_next_call(
    runtime_factory,  # noqa: F811
    fake_llm_env,
    caplog,
) -> None:
    """Preparing the checks fails once (a read error): the review call goes on without them,
    a WARNING says why, and the check waits, unclaimed, for the next review call."""
    rt = await runtime_factory(
        merge_checks=True,
        **{**SETTINGS, "classify_batch_wait_seconds": 3600, "classify_batch_size": 1},
    )
    for i, text in enumerate(AUTH[:3]):
        await remember(rt, text, 3, 9 + i)
    for i, text in enumerate(DB):
        await remember(rt, text, 3, 12 + i)
    assert rt.api.health()["episodes"]["merge_waiting"] == 1  # waits for a review call
    consolidation = rt.episodes.engine.consolidation
    real = consolidation._describe
    failures = [RuntimeError("disk read failed")]

    async def flaky(episode_id: str):  # noqa: ANN202
        if failures:
            raise failures.pop()
        return await real(episode_id)

    consolidation._describe = flaky  # fault injection into the real engine
    state = rt.episodes.engine.state
    state.settings.llm_doubt_share = 1.0  # the next memories are reviewed
    await remember(rt, "Lunch order for the team offsite: pizza.", 3, 17)
    assert await rt.episodes.worker.drain(30, due_only=True)
    [first] = fake_llm_env.by_purpose("classify")
    assert merge_checks(first.text) == []  # reviewed without the check
    assert "merge checks not prepared" in caplog.text
    assert rt.api.health()["episodes"]["merge_waiting"] == 1  # still waiting
    await remember(rt, "Dessert order for the team offsite: ice cream.", 3, 18)
    assert await rt.episodes.worker.drain(30, due_only=True)
    second = fake_llm_env.by_purpose("classify")[-1]
    assert len(merge_checks(second.text)) == 1  # carried by the next review call
    assert rt.api.health()["episodes"]["merge_waiting"] == 0
