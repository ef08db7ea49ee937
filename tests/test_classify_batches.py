"""Doubtful memories go to the LLM in batches, within a budget of calls per memory.

Through the real engine, model and litellm client against the fake LLM server. The strategy
is ``llm`` so that every memory with a candidate is doubtful: which memories are routed is then
known in advance, and what is tested is the batching, the budget and how answers are applied.
"""

from __future__ import annotations

from typing import Any

from fakellm import Recorded, Reply, default_reply, new_memories
from test_episodes_compose import IOS, runtime_factory  # noqa: F401
from test_episodes_engine import AUTH, DB, remember, settle


async def test_doubtful_memories_share_one_call_and_answers_are_applied(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    rt = await runtime_factory(
        detector_strategy="llm",
        classify_calls_per_memory=1.0,
        classify_batch_size=4,
        classify_batch_wait_seconds=60,
    )
    first = (await remember(rt, AUTH[0], 3, 9))["memory_id"]  # no candidate: a seed at once
    auth_ids: set[str] = set()

    def answer(request: Recorded) -> Reply:
        if request.purpose != "classify":
            return default_reply(request)
        decisions: list[dict[str, Any]] = []
        for memory_id, _ in new_memories(request.messages[1]["content"]):
            if memory_id in auth_ids:  # every auth memory joins the thread of the first one
                decisions.append(
                    {"memory_id": memory_id, "action": "join", "episode_id": f"thread-{first}"}
                )
            else:
                decisions.append({"memory_id": memory_id, "action": "none"})
        return Reply.json({"decisions": decisions})

    fake_llm_env.responder = answer
    waiting = []
    for i, text in enumerate([AUTH[1], AUTH[2], AUTH[3]]):
        result = await remember(rt, text, 3, 10 + i)
        auth_ids.add(result["memory_id"])
        waiting.append(result)
    # the engine's clock stands still: the three wait for company, nothing is asked yet
    assert [r["episode_status"] for r in waiting] == ["pending"] * 3
    assert rt.api.health()["episodes"]["classify_waiting"] == 3
    assert fake_llm_env.by_purpose("classify") == []
    db = (await remember(rt, DB[0], 3, 14))["memory_id"]  # the fourth fills the batch
    await settle(rt)
    [call] = fake_llm_env.by_purpose("classify")
    sent = {memory_id for memory_id, _ in new_memories(call.messages[1]["content"])}
    assert sent == auth_ids | {db}
    episode = (await rt.api.get_memory(first))["episode_id"]
    assert episode is not None
    for memory_id in auth_ids:  # the first joins the seed, the others the episode it started
        assert (await rt.api.get_memory(memory_id))["episode_id"] == episode
    got = await rt.api.get_memory(db)
    assert (got["episode_id"], got["episode_status"]) == (None, "unassigned")
    queue = rt.api.health()["episodes"]
    assert (queue["classify_calls"], queue["classified_memories"]) == (1, 4)
    assert queue["classify_waiting"] == 0

    late = await remember(rt, DB[1], 3, 15)  # alone in its batch: waits ...
    assert late["episode_status"] == "pending"
    assert await rt.episodes.worker.drain(30, due_only=True)  # nothing due: it keeps waiting
    assert (await rt.api.get_memory(late["memory_id"]))["episode_status"] == "pending"
    await settle(rt)  # ... until a full drain asks at once
    assert len(fake_llm_env.by_purpose("classify")) == 2
    assert (await rt.api.get_memory(late["memory_id"]))["episode_status"] != "pending"


async def test_the_budget_caps_classification_calls(runtime_factory, fake_llm_env) -> None:  # noqa: F811
    """At 0.3 calls per memory, memory k (k decided before it) may be asked only while the
    calls made or waiting stay <= 0.3 k: memories 1, 4 and 7 of ten, so exactly 3 calls. Each
    memory settles before the next (a waiting memory could otherwise be picked up as a seed
    by the next one and never cost its call)."""
    rt = await runtime_factory(
        detector_strategy="llm",
        classify_calls_per_memory=0.3,
        classify_batch_size=1,
        classify_batch_wait_seconds=0,
    )
    texts = [AUTH[0], DB[0], AUTH[1], DB[1], AUTH[2], DB[2], AUTH[3], DB[3], *IOS]
    ids = []
    for i, text in enumerate(texts):
        ids.append((await remember(rt, text, 3, 9 + i))["memory_id"])
        await settle(rt)
    asked = [m for r in fake_llm_env.by_purpose("classify") for m, _ in new_memories(r.text)]
    assert asked == [ids[1], ids[4], ids[7]]
    queue = rt.api.health()["episodes"]
    assert queue["classify_calls"] == 3 and queue["classify_calls_per_memory"] == 0.3
    assert queue["classify_budget_left"] == 1  # int(0.3 * 10 + 1) - 3
    for memory_id in ids:  # every memory decided: by the LLM or, past the budget, at once
        assert (await rt.api.get_memory(memory_id))["episode_status"] != "pending"


async def test_a_memory_waiting_for_the_llm_is_not_taken_as_a_seed(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """The second memory waits for the LLM; the third, past the budget, is decided by
    embeddings and must not start an episode with the waiting one: that memory's own decision
    is the LLM's to make (taking it would throw its answer away)."""
    rt = await runtime_factory(
        detector_strategy="llm",
        classify_calls_per_memory=0.3,
        classify_batch_size=4,
        classify_batch_wait_seconds=60,
    )
    await remember(rt, DB[0], 3, 9)  # no candidate: a seed
    waiting = await remember(rt, AUTH[1], 3, 10)  # asked (budget 0.3 * 1 + 1), waits
    assert waiting["episode_status"] == "pending"
    third = await remember(rt, AUTH[2], 3, 11)  # over budget: embeddings decide at once
    assert third["episode_status"] == "unassigned" and third["episode_id"] is None
    assert (await rt.api.get_memory(waiting["memory_id"]))["episode_status"] == "pending"
    await settle(rt)
    [call] = fake_llm_env.by_purpose("classify")
    assert [m for m, _ in new_memories(call.text)] == [waiting["memory_id"]]
