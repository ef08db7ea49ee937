"""Resumption: without an LLM, an episode that takes up an older thread after a pause is merged
into it by the proper names both use (tribalmemory.episodes.resumption)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from helpers_runtime import settle

from tribalmemory.episodes import resumption
from tribalmemory.episodes.detector import (
    DetectorContext,
    MemoryFeatures,
    build_episode,
    proper_names,
    update_context,
)
from tribalmemory.errors import NotFound
from tribalmemory.timeutil import to_iso

T0 = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)

# A conversation between Maren and Tobias in two sittings three days apart, about different
# things; a second thread between other people in between; then something else a day later.
# The second sitting has five messages so that, with one left loose, it still has the four
# members the rule asks for (resumption.MIN_MEMBERS).
FIRST_SITTING = [
    "Hey Tobias, the kayak trip with Maren's brother Jannik is on for Saturday.",
    "Great Maren! Should I bring the waterproof bags Jannik lent us last summer?",
    "Yes Tobias, and ask Jannik whether the river at Lindholm is high this week.",
    "Jannik says the Lindholm river is fine, Maren, we start at eight.",
    "Perfect Tobias, I will pack sandwiches for Jannik and us.",
]
OTHER_THREAD = [
    "Priya, the bakery on Wexford street changed its opening hours to seven.",
    "Thanks Dmitri, then I can pick up the sourdough before work at Wexford.",
    "Priya, they also sell rye now, Dmitri's favourite at the Wexford bakery.",
    "Dmitri, I tried the rye from Wexford this morning and it was excellent.",
]
SECOND_SITTING = [
    "Tobias, my sister's wedding is next month and Jannik is the best man.",
    "That is wonderful Maren, will Jannik give a speech at the wedding?",
    "He is nervous, Tobias, Jannik asked me to help write the speech.",
    "Maren, tell Jannik to keep it short and to mention the kayak trip.",
    "Good idea Tobias, Jannik will open the wedding speech with the kayak trip.",
]
ELSEWHERE = "The release checklist gained a step for rotating the signing keys."

APART = 0.45
"""A join threshold that leaves the second sitting apart when it is written. The fitted model
joins it to the first at once (P(joins) 0.43 three days later: the same three names), which is
what this file's rule would do later; the rule is what is tested here, so it needs an episode to
merge. At 0.45 every part still forms its episode (P 0.52-0.84 inside each)."""


def at(minutes: float) -> str:
    return to_iso(T0 + timedelta(minutes=minutes))


async def remember_at(rt, text: str, minutes: float) -> str:  # noqa: ANN001
    result = await rt.api.remember(text, created_at=at(minutes))
    assert result["success"], result
    return result["memory_id"]


async def episode_of(rt, memory_id: str) -> str | None:  # noqa: ANN001
    return (await rt.api.get_memory(memory_id))["episode_id"]


async def conversation(rt) -> dict[str, list[str]]:  # noqa: ANN001
    """The two sittings and the other thread, settled; every part an episode of its own."""
    ids: dict[str, list[str]] = {"first": [], "other": [], "second": []}
    for i, text in enumerate(FIRST_SITTING):
        ids["first"].append(await remember_at(rt, text, 10 * i))
    for i, text in enumerate(OTHER_THREAD):
        ids["other"].append(await remember_at(rt, text, 60 * 24 + 10 * i))
    for i, text in enumerate(SECOND_SITTING):
        ids["second"].append(await remember_at(rt, text, 60 * 24 * 3 + 10 * i))
    await settle(rt)
    return ids


async def test_a_sitting_that_resumes_a_conversation_is_merged_into_it_once_quiet(
    engine_runtime,
) -> None:
    rt = await engine_runtime(join_threshold=APART)
    ids = await conversation(rt)
    first, other, second = [await episode_of(rt, ids[k][0]) for k in ("first", "other", "second")]
    assert len({first, other, second}) == 3, "each part starts an episode of its own"
    # Each part's memories are in its episode, or left loose by the detector (a miss the
    # detection benchmarks count; here the fitted model leaves the other thread's second
    # message, P(joins) 0.285 at a cold start, a seed): never in another part's episode.
    for key, episode in (("first", first), ("other", other), ("second", second)):
        assert {await episode_of(rt, m) for m in ids[key]} - {None} == {episode}

    await remember_at(rt, ELSEWHERE, 60 * 24 * 4)  # the second sitting is quiet from here
    await settle(rt)

    survivor = await episode_of(rt, ids["first"][0])
    assert survivor == first  # the larger part keeps its id
    assert {await episode_of(rt, m) for m in ids["first"] + ids["second"]} - {None} == {first}
    assert {await episode_of(rt, m) for m in ids["other"]} - {None} == {other}  # names nobody
    history = (await rt.api.episode_get(first))["history"]
    merge = [h for h in history if h["action"] == "merge"]
    assert merge and merge[-1]["actor"] == "detector"
    assert merge[-1]["details"]["absorbed"] == second
    with pytest.raises(NotFound, match=f"merged into {first}"):
        await rt.api.episode_get(second)


async def test_an_episode_the_user_edited_is_not_merged_by_it(engine_runtime) -> None:
    rt = await engine_runtime(join_threshold=APART)
    ids = await conversation(rt)
    first = await episode_of(rt, ids["first"][0])
    second = await episode_of(rt, ids["second"][0])
    note = await remember_at(rt, "Note: bring the spare paddle.", 60 * 24 * 3 + 45)
    await rt.api.episode_add(first, note)  # the user's episode from now on
    await remember_at(rt, ELSEWHERE, 60 * 24 * 4)
    await settle(rt)
    assert await episode_of(rt, ids["second"][0]) == second != first


async def test_with_an_llm_the_rule_is_off(engine_runtime, fake_llm_env) -> None:
    """Hybrid with a working LLM: merges need its answers (merge checks), not names."""
    rt = await engine_runtime(detector_strategy="hybrid", merge_checks=False, join_threshold=APART)
    ids = await conversation(rt)
    second = await episode_of(rt, ids["second"][0])
    await remember_at(rt, ELSEWHERE, 60 * 24 * 4)
    await settle(rt)
    assert await episode_of(rt, ids["second"][0]) == second != await episode_of(rt, ids["first"][0])


def test_proper_names_are_the_capitalised_words_inside_a_sentence() -> None:
    text = "Hey Jon! Good to see you. I met Gina at DoorDash with an iPhone; ask McKay."
    assert proper_names(text) == {"jon", "gina", "doordash", "mckay"}
    assert proper_names("yohannes, why not try the archive manager?") == frozenset()


def memory(id: str, text: str, minutes: float, vector: list[float]) -> MemoryFeatures:
    return MemoryFeatures.from_text(
        id, np.array(vector, dtype=np.float32), text, created_at=T0 + timedelta(minutes=minutes)
    )


def context_of(memories: list[MemoryFeatures]) -> DetectorContext:
    context = DetectorContext()
    for m in memories:
        update_context(context, m)
    return context


def test_the_older_episode_with_the_most_alike_names_is_resumed() -> None:
    old = [memory(f"a{i}", f"Hi Maren, Jannik called about {w}.", i, [1, 0]) for i, w in
           enumerate(["boats", "rivers", "maps", "tents"])]  # fmt: skip
    other = [memory(f"b{i}", f"Hi Priya, Dmitri asked about {w}.", i, [0, 1]) for i, w in
             enumerate(["bread", "rye", "hours", "flour"])]  # fmt: skip
    new = [memory(f"c{i}", f"Well Maren, Jannik wrote about {w}.", 900 + i, [1, 1]) for i, w in
           enumerate(["weddings", "speeches", "cakes", "music"])]  # fmt: skip
    context = context_of(old + other + new)
    a, b, c = build_episode("A", old), build_episode("B", other), build_episode("C", new)
    assert resumption.resumed(c, [a, b], context) == "A"
    assert resumption.resumed(a, [b, c], context) is None  # only older episodes are resumed
    assert resumption.resumed(c, [b], context) is None  # no shared name
    nameless = build_episode("D", [memory(f"d{i}", "plain words here", 950 + i, [1, 0])
                                   for i in range(4)])  # fmt: skip
    assert resumption.resumed(nameless, [a, b], context) is None


def test_an_episode_is_checked_once_it_is_quiet_for_the_pace_cap_and_has_four_members() -> None:
    members = [memory(f"m{i}", "Maren and Jannik", 10 * i, [1, 0]) for i in range(4)]
    context = context_of(members)  # the pace: 10 minutes
    episode = build_episode("E", members)
    last = episode.last_activity
    cap = timedelta(minutes=10 * resumption.IDLE_PACES)
    assert not resumption.quiet(episode, last + cap - timedelta(minutes=1), context)
    assert resumption.quiet(episode, last + cap, context)
    small = build_episode("S", members[:3])
    assert not resumption.quiet(small, last + 10 * cap, context)


def test_names_weigh_by_use_and_rarity() -> None:
    assert resumption.name_cosine({}, {"x": 1.0}) == 0.0
    assert resumption.name_cosine({"x": 1.0}, {"x": 3.0}) == 1.0
    assert resumption.name_cosine({"x": 1.0, "y": 1.0}, {"x": 1.0}) == 1 / np.sqrt(2)
