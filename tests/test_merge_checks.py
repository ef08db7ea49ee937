"""Two episodes that are one thread are merged when the LLM says so twice (``merge_checks``).

Through the real engine, model and litellm client against the fake LLM server. Reviews are off
(``llm_doubt_share`` 0), so the only LLM calls of the detector are merge checks. The auth and
database notes form two episodes by embeddings; the scripted LLM decides whether they are one
thread, which is what is tested: when a check is asked, what it shows, and what its answer does.
"""

from __future__ import annotations

from fakellm import EPISODE_RE, Recorded, Reply, default_reply, merge_checks, merges, new_memories
from test_episodes_compose import runtime_factory  # noqa: F401
from test_episodes_engine import AUTH, DB, remember, settle

from tribalmemory.episodes.consolidation import survivor_of

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


def one_thread(pair: list[str]):  # noqa: ANN201
    """A merge responder that finds the two episodes of ``pair`` to be one thread (either way
    round) and answers "none" for any other check."""

    def answer(request: Recorded) -> Reply:
        if request.purpose != "merge":
            return default_reply(request)
        found = []
        for checked in merge_checks(request.text):
            other = pair[1] if checked == pair[0] else pair[0] if checked == pair[1] else None
            found.append((checked, other))
        return Reply.json(merges(*found))

    return answer


async def test_two_episodes_the_llm_finds_to_be_one_thread_twice_are_merged(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """The database episode reaches 4 members and is checked: "same as the auth episode". That
    answer is asked again from the auth episode's side, against its most similar episodes (only
    the database one here), and the second "same" merges them."""
    rt = await runtime_factory(merge_checks=True, **SETTINGS)
    pair: list[str] = []
    fake_llm_env.responder = one_thread(pair)
    auth = [(await remember(rt, text, 3, 9 + i))["memory_id"] for i, text in enumerate(AUTH[:3])]
    auth_episode = await episode_of(rt, auth[0])
    pair.append(auth_episode)
    await rt.api.memory_used(auth[0])  # access statistics of the memory and of its episode
    assert auth_episode in rt.service.access.get([auth_episode])
    db = [(await remember(rt, text, 3, 12 + i))["memory_id"] for i, text in enumerate(DB)]
    db_episode_before = await episode_of(rt, db[-1])
    pair.append(db_episode_before)
    await settle(rt)
    first, second = fake_llm_env.by_purpose("merge")
    assert merge_checks(first.text) == [db_episode_before]  # checked when it reached 4
    assert f'<episode id="{auth_episode}">' in first.text  # the auth episode was a candidate
    assert merge_checks(second.text) == [auth_episode]  # the confirmation, from the other side
    assert f'<episode id="{db_episode_before}">' in second.text
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
    assert (health["classify_calls"], health["merge_waiting"]) == (2, 0)
    assert rt.service.access.get([auth_episode]) == {}  # merged away: its statistics go too


OFFICE = [
    "Office move: the Berlin team moves to the new floor on 14 March; desks are labelled by team.",
    "Office move: the movers come at 8:00 on 14 March; pack your monitors and label the boxes.",
]


async def test_the_confirmation_is_asked_among_the_nearest_episodes_not_alone(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """A "yes" to a single named episode is what a wrong answer most often is: the second
    answer is asked of the auth episode among its most similar episodes (the office one too),
    and it merges only because it names the database episode again."""
    rt = await runtime_factory(merge_checks=True, **SETTINGS)
    pair: list[str] = []
    fake_llm_env.responder = one_thread(pair)
    office = [(await remember(rt, t, 3, 7 + i))["memory_id"] for i, t in enumerate(OFFICE)]
    auth = [(await remember(rt, text, 3, 9 + i))["memory_id"] for i, text in enumerate(AUTH[:3])]
    pair.append(await episode_of(rt, auth[0]))
    office_episode = await episode_of(rt, office[0])
    assert office_episode != pair[0]
    db = [(await remember(rt, text, 3, 12 + i))["memory_id"] for i, text in enumerate(DB)]
    pair.append(await episode_of(rt, db[-1]))
    await settle(rt)
    first, second = fake_llm_env.by_purpose("merge")
    assert merge_checks(first.text) == [pair[1]]
    assert merge_checks(second.text) == [pair[0]]  # the confirmation, among others
    shown = {e for e, _ in EPISODE_RE.findall(second.text)} - {pair[0]}
    assert shown == {pair[1], office_episode}
    for memory_id in auth + db:
        assert await episode_of(rt, memory_id) == pair[1]
    assert await episode_of(rt, office[0]) == office_episode


async def test_a_same_answer_that_the_confirmation_denies_merges_nothing(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """One mistaken "same" is not enough: the confirmation says "none", both episodes stay."""
    rt = await runtime_factory(merge_checks=True, **SETTINGS)
    auth_episode = ""

    def answer(request: Recorded) -> Reply:
        if request.purpose != "merge":
            return default_reply(request)
        checked = merge_checks(request.text)  # "same" from the database side only
        return Reply.json(
            merges(*((e, auth_episode if e != auth_episode else None) for e in checked))
        )

    fake_llm_env.responder = answer
    auth = [(await remember(rt, text, 3, 9 + i))["memory_id"] for i, text in enumerate(AUTH[:3])]
    auth_episode = await episode_of(rt, auth[0])
    db = [(await remember(rt, text, 3, 12 + i))["memory_id"] for i, text in enumerate(DB)]
    await settle(rt)
    first, second = fake_llm_env.by_purpose("merge")
    assert merge_checks(second.text) == [auth_episode]  # asked again, and denied
    assert await episode_of(rt, auth[0]) == auth_episode != await episode_of(rt, db[0])
    assert len((await rt.api.episodes_list())["episodes"]) == 2
    assert rt.api.health()["episodes"]["merge_waiting"] == 0


def test_a_merge_needs_two_answers_that_agree() -> None:
    from tribalmemory.episodes.consolidation import Taken, agreed

    taken = Taken(["a", "b", "c"], proposals={"a": ["x", "y"], "b": ["c"], "c": ["b"]})
    # a first "same" asks the other side; two checks of one call that name each other merge
    assert agreed(taken, {"a": "x", "b": "c", "c": "b"}) == ([("b", "c")], {"x": "a"})
    # an answer that names no candidate of its check, or "none", does nothing
    assert agreed(taken, {"a": "z", "b": None}) == ([], {})
    # a confirmation that agrees merges
    confirming = Taken(["x"], proposals={"x": ["a"]}, confirming={"x": "a"})
    assert agreed(confirming, {"x": "a"}) == ([("x", "a")], {})
    assert agreed(confirming, {"x": None}) == ([], {})


async def test_a_none_answer_keeps_both_episodes(runtime_factory, fake_llm_env) -> None:  # noqa: F811
    rt = await runtime_factory(merge_checks=True, **SETTINGS)
    auth, db = await two_threads(rt)  # the fake's default answer is "none" for every check
    assert len(fake_llm_env.by_purpose("merge")) == 1
    assert await episode_of(rt, auth[0]) != await episode_of(rt, db[0])
    assert len((await rt.api.episodes_list())["episodes"]) == 2


async def test_merge_checks_are_on_by_default(runtime_factory, fake_llm_env) -> None:  # noqa: F811
    rt = await runtime_factory(**SETTINGS)
    await two_threads(rt)
    assert len(fake_llm_env.by_purpose("merge")) == 1


async def test_merge_checks_can_be_turned_off(runtime_factory, fake_llm_env) -> None:  # noqa: F811
    rt = await runtime_factory(merge_checks=False, **SETTINGS)
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

    assert [n for n in range(1, 40) if wants_check(n - 1, n)] == [4, 8, 16, 32]
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


def test_a_confirmation_asks_among_the_nearest_with_the_twin_in_place_of_the_last() -> None:
    import numpy as np

    from tribalmemory.episodes.detector import (
        DetectorContext,
        MemoryFeatures,
        confirm_candidates,
        new_episode,
        update_context,
    )
    from tribalmemory.timeutil import parse_iso

    at = parse_iso("2025-03-03T10:00:00Z")
    context = DetectorContext()
    vectors = {"a": [1, 0, 0], "b": [0.9, 0.1, 0], "c": [0.7, 0.3, 0], "d": [0, 0, 1]}
    memories = {
        k: MemoryFeatures.from_text(k, np.array(v), f"note {k}", created_at=at)
        for k, v in vectors.items()
    }
    for m in memories.values():
        update_context(context, m)
    checked = new_episode("a", memories["a"])
    others = [new_episode(k, memories[k]) for k in "bcd"]

    def ids(twin: str, k: int) -> list[str]:
        return [e.id for e in confirm_candidates(checked, others, twin, context, k)]

    assert ids("b", 2) == ["b", "c"]  # already among the nearest: as a merge check
    assert ids("d", 2) == ["b", "d"]  # the far twin replaces the last, best first still
    assert ids("d", 1) == ["d"]
    assert ids("gone", 2) == []  # merged or closed meanwhile: nothing to confirm


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
    pair: list[str] = []

    def answer(request: Recorded) -> Reply:
        if request.purpose != "classify":
            return default_reply(request)
        decisions = [{"memory_id": m, "action": "none"} for m, _ in new_memories(request.text)]
        found = [(e, next(p for p in pair if p != e)) for e in merge_checks(request.text)]
        return Reply.json({"decisions": decisions, **merges(*found)})

    fake_llm_env.responder = answer
    auth = [(await remember(rt, text, 3, 9 + i))["memory_id"] for i, text in enumerate(AUTH[:3])]
    pair.append(await episode_of(rt, auth[0]))
    db = [(await remember(rt, text, 3, 12 + i))["memory_id"] for i, text in enumerate(DB)]
    pair.append(await episode_of(rt, db[-1]))
    assert rt.api.health()["episodes"]["merge_waiting"] == 1  # waiting for a review call
    rt.episodes.engine.state.settings.llm_doubt_share = 1.0  # the next memories are reviewed
    await remember(rt, "Lunch order for the team offsite: pizza.", 3, 17)
    # run what is due (the review, its batch full); the check itself is not due for an hour
    assert await rt.episodes.worker.drain(30, due_only=True)
    [call] = fake_llm_env.by_purpose("classify")
    assert merge_checks(call.text) == [pair[1]]
    assert rt.api.health()["episodes"]["merge_waiting"] == 1  # its confirmation waits
    assert await episode_of(rt, auth[0]) != await episode_of(rt, db[0])
    await remember(rt, "Dessert order for the team offsite: ice cream.", 3, 18)
    assert await rt.episodes.worker.drain(30, due_only=True)
    second = fake_llm_env.by_purpose("classify")[-1]
    assert merge_checks(second.text) == [pair[0]]  # the confirmation rode along too
    assert fake_llm_env.by_purpose("merge") == []  # no call of their own
    assert await episode_of(rt, auth[0]) == await episode_of(rt, db[0])
    assert rt.api.health()["episodes"]["merge_waiting"] == 0


async def test_a_review_answer_that_leaves_out_its_checks_still_places_its_memories(
    runtime_factory,  # noqa: F811
    fake_llm_env,
    caplog,
) -> None:
    """The review call carries waiting checks, and the LLM answers the memory's decision but
    not the checks: the decision is carried out (one call, no retry), the checks are over, and
    the health and a WARNING say that they went unanswered."""
    rt = await runtime_factory(
        merge_checks=True,
        **{**SETTINGS, "classify_batch_wait_seconds": 3600, "classify_batch_size": 1},
    )

    def answer(request: Recorded) -> Reply:
        if request.purpose != "classify":
            return default_reply(request)
        decisions = [{"memory_id": m, "action": "none"} for m, _ in new_memories(request.text)]
        return Reply.json({"decisions": decisions})  # no "merges"

    fake_llm_env.responder = answer
    auth = [(await remember(rt, text, 3, 9 + i))["memory_id"] for i, text in enumerate(AUTH[:3])]
    for i, text in enumerate(DB):
        await remember(rt, text, 3, 12 + i)
    assert rt.api.health()["episodes"]["merge_waiting"] == 1  # waiting for a review call
    rt.episodes.engine.state.settings.llm_doubt_share = 1.0  # the next memory is reviewed
    late = (await remember(rt, AUTH[3], 3, 17))["memory_id"]
    assert (await rt.api.get_memory(late))["episode_id"] == await episode_of(rt, auth[0])
    with caplog.at_level("WARNING", logger="tribalmemory.episodes"):
        assert await rt.episodes.worker.drain(30, due_only=True)
    [call] = fake_llm_env.by_purpose("classify")
    # the database episode's check and the auth episode's (the late memory made it four)
    assert len(merge_checks(call.text)) == 2
    assert (await rt.api.get_memory(late))["episode_id"] is None  # "none": moved out
    health = rt.api.health()["episodes"]
    assert (health["merge_waiting"], health["merge_unanswered"]) == (0, 2)
    assert any("no valid answer" in r.getMessage() for r in caplog.records)


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


async def test_a_confirmation_queued_while_its_episode_is_in_another_call_is_kept(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """The database episode's own check is in a call when another answer asks to confirm it:
    finishing that call must not drop the confirmation queued meanwhile."""
    from tribalmemory.episodes.consolidation import Taken

    rt = await runtime_factory(
        merge_checks=True, **{**SETTINGS, "classify_batch_wait_seconds": 3600}
    )
    auth = [(await remember(rt, text, 3, 9 + i))["memory_id"] for i, text in enumerate(AUTH[:3])]
    db = [(await remember(rt, text, 3, 12 + i))["memory_id"] for i, text in enumerate(DB)]
    auth_episode, db_episode = await episode_of(rt, auth[0]), await episode_of(rt, db[0])
    assert rt.api.health()["episodes"]["merge_waiting"] == 1  # its check waits (an hour)
    consolidation = rt.episodes.engine.consolidation
    store = rt.episodes.engine.state.store
    in_call = await consolidation.take(first=db_episode)  # its check, claimed by a call
    assert db_episode in in_call.keys
    other = Taken([auth_episode], proposals={auth_episode: [db_episode]})
    await consolidation.settle(other, {auth_episode: db_episode})  # "same": confirm from db
    await consolidation.settle(in_call, None)  # the first call ends without an answer
    [job] = [j for j in store.jobs.of_kind("merge") if j.key == db_episode]
    assert job.payload == {"confirm": auth_episode}


def test_a_first_check_waits_for_a_review_call_while_reviews_are_on() -> None:
    """A first look waits as long as an episode stays active for a review call to carry it;
    with reviews off none comes, and it waits as a confirmation does."""
    from tribalmemory.config import EpisodesConfig
    from tribalmemory.episodes.consolidation import first_check_wait, reviews_on

    day = 86400.0
    assert first_check_wait(60, 14, reviews=True) == 14 * day
    assert first_check_wait(60, 14, reviews=False) == 60
    assert first_check_wait(2 * day, 0.5, reviews=True) == 2 * day  # never below the review wait
    assert reviews_on("hybrid", EpisodesConfig().llm_doubt_share)  # the default hybrid reviews
    assert not reviews_on("hybrid", 0.0)
    assert reviews_on("llm", 0.0)


async def test_with_reviews_on_a_first_check_waits_the_active_window_not_the_review_wait(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """Every memory is reviewed, its review waiting an hour for company: the first check
    queued meanwhile is due on its own only after the active window (14 days), not after the
    hour a review waits; a review call carries it long before (as in the ride-along test)."""
    rt = await runtime_factory(
        merge_checks=True,
        **{
            **SETTINGS,
            "llm_doubt_share": 1.0,
            "classify_batch_size": 8,
            "classify_batch_wait_seconds": 3600,
        },
    )
    for i, text in enumerate(AUTH[:3]):
        await remember(rt, text, 3, 9 + i)
    for i, text in enumerate(DB):
        await remember(rt, text, 3, 12 + i)
    assert await rt.episodes.worker.drain(30, due_only=True)
    assert fake_llm_env.by_purpose("merge") == []
    store = rt.episodes.engine.state.store
    [check] = store.jobs.of_kind("merge")
    assert "confirm" not in check.payload  # a first look
    assert check.not_before - check.created_at == 14 * 86400.0
    reviews = store.jobs.of_kind("classify")
    assert reviews and all(j.not_before - j.created_at <= 3600 for j in reviews)


def test_a_confirmation_follows_its_twin_into_the_episode_that_absorbed_it() -> None:
    """A call's answers merge B into C and say A is B: the confirmation is asked of C, which
    holds B now (asked of B, gone, it was lost and A stayed apart)."""
    into = {"ep-b": "ep-c", "ep-c": "ep-d"}  # B into C, then C into D
    assert survivor_of(into, "ep-b") == "ep-d"
    assert survivor_of(into, "ep-c") == "ep-d"
    assert survivor_of(into, "ep-a") == "ep-a"
    assert survivor_of({}, "ep-b") == "ep-b"


DB_MORE = [
    *DB,
    "Postgres migration: the replica lag alarm is raised to 30 seconds during the pgloader copy.",
]
OFFICE_MOVE = [
    *OFFICE,
    "Office move: the new floor's meeting rooms are booked through the same calendar as before.",
    "Office move: parking cards for the new building are handed out at reception on 13 March.",
]


async def test_one_call_that_merges_a_twin_away_sends_the_confirmation_to_its_survivor(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """The engine-level case of the rule above: one merge call checks the auth, office and
    database episodes at once and answers auth = database, database = auth (agreed: merged
    into the database episode, the larger) and office = auth (to be confirmed). The auth
    episode is gone after this call's merge, so the confirmation is asked of the database
    episode that absorbed it, and its "same as office" merges the office notes in too. (Asked
    of the auth episode, it was dropped, and the office notes stayed apart.)"""
    rt = await runtime_factory(
        merge_checks=True, **{**SETTINGS, "classify_batch_wait_seconds": 3600}
    )
    plan: dict[str, str] = {}  # the first call's answers, by checked episode
    later: dict[str, str] = {}  # the answers of every call after it

    def answer(request: Recorded) -> Reply:
        if request.purpose != "merge":
            return default_reply(request)
        said = plan if len(fake_llm_env.by_purpose("merge")) == 1 else later  # this one counted
        return Reply.json(merges(*((e, said.get(e)) for e in merge_checks(request.text))))

    fake_llm_env.responder = answer
    auth = [(await remember(rt, text, 3, 7 + i))["memory_id"] for i, text in enumerate(AUTH)]
    db = [(await remember(rt, text, 3, 11 + i))["memory_id"] for i, text in enumerate(DB_MORE)]
    office = [(await remember(rt, t, 3, 16 + i))["memory_id"] for i, t in enumerate(OFFICE_MOVE)]
    auth_episode, db_episode = await episode_of(rt, auth[0]), await episode_of(rt, db[0])
    office_episode = await episode_of(rt, office[0])
    assert len({auth_episode, db_episode, office_episode}) == 3
    for ids, episode in ((auth, auth_episode), (db, db_episode), (office, office_episode)):
        assert [await episode_of(rt, m) for m in ids] == [episode] * len(ids)
    # each reached 4 members: three first checks, waiting an hour for company
    assert rt.api.health()["episodes"]["merge_waiting"] == 3
    plan.update({auth_episode: db_episode, db_episode: auth_episode, office_episode: auth_episode})
    later.update({auth_episode: office_episode, db_episode: office_episode})  # "yes" to office
    await settle(rt)  # the waiting checks fall due at once: one call takes all three
    first, second = fake_llm_env.by_purpose("merge")
    assert sorted(merge_checks(first.text)) == sorted([auth_episode, db_episode, office_episode])
    survivor = await episode_of(rt, auth[0])
    assert survivor == db_episode  # the larger of the pair keeps its id: the twin is gone
    assert merge_checks(second.text) == [survivor]  # the confirmation, asked of the survivor
    assert f'<episode id="{office_episode}">' in second.text  # about the office episode
    for memory_id in auth + db + office:
        assert await episode_of(rt, memory_id) == survivor
    assert [e["id"] for e in (await rt.api.episodes_list())["episodes"]] == [survivor]
    assert rt.api.health()["episodes"]["merge_waiting"] == 0
