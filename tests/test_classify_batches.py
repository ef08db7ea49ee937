"""Doubtful memories are placed at once and reviewed by the LLM in batches, within a budget of
calls per memory.

Through the real engine, model and litellm client against the fake LLM server. The strategy
is ``llm`` so that every memory with a candidate is doubtful: which memories are reviewed is
then known in advance, and what is tested is the batching, the budget and how verdicts move
memories.
"""

from __future__ import annotations

import asyncio
import contextvars
import html
import threading
from typing import Any

from fakellm import EPISODE_RE, Recorded, Reply, default_reply, new_memories
from fakellm import decisions as classify_answer
from test_episodes_compose import IOS, runtime_factory  # noqa: F401
from test_episodes_engine import AUTH, DB, remember, settle

from tribalmemory.episodes.budget import BUDGET_KEY


async def reviewing(runtime_factory: Any, batch_size: int) -> Any:  # noqa: F811
    """A runtime whose every memory with a candidate is doubtful (strategy ``llm``), reviewed
    in full batches of ``batch_size`` (the engine's clock stands still: none is asked before),
    one call a memory allowed."""
    return await runtime_factory(
        detector_strategy="llm",
        classify_calls_per_memory=1.0,
        classify_batch_size=batch_size,
        classify_batch_wait_seconds=3600,
    )


async def test_doubtful_memories_are_placed_at_once_and_reviewed_in_one_call(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    rt = await reviewing(runtime_factory, 3)
    first = (await remember(rt, DB[0], 3, 9))["memory_id"]  # no candidate: a seed, no review
    doubtful: list[str] = []

    def answer(request: Recorded) -> Reply:
        if request.purpose != "classify":
            return default_reply(request)
        decisions: list[dict[str, Any]] = []
        for memory_id, _ in new_memories(request.messages[1]["content"]):
            if memory_id == doubtful[1]:  # the LLM takes the middle one out of the thread
                decisions.append({"memory_id": memory_id, "action": "none"})
            else:  # and puts the other two in a new thread of their own
                decisions.append({"memory_id": memory_id, "action": "create", "title": "Tabs"})
        return Reply.json(classify_answer(*decisions, user=request.text))

    fake_llm_env.responder = answer
    for i, text in enumerate(AUTH[:2]):
        result = await remember(rt, text, 3, 10 + i)
        doubtful.append(result["memory_id"])
        assert result["episode_status"] != "pending"  # placed at once, not waiting
    # the engine's clock stands still: the two wait for company, nothing is asked yet
    assert rt.api.health()["episodes"]["classify_waiting"] == 2
    assert fake_llm_env.by_purpose("classify") == []
    provisional = await rt.api.get_memory(doubtful[1])
    assert provisional["episode_id"] is not None  # the embeddings put the two auth notes together
    doubtful.append((await remember(rt, AUTH[2], 3, 12))["memory_id"])  # fills the batch
    await settle(rt)
    [call] = fake_llm_env.by_purpose("classify")
    assert [m for m, _ in new_memories(call.text)] == doubtful
    a, b, c = [await rt.api.get_memory(m) for m in doubtful]
    assert a["episode_id"] is not None and a["episode_id"] == c["episode_id"]
    assert (b["episode_id"], b["episode_status"]) == (None, "unassigned")
    assert (await rt.api.get_memory(first))["episode_id"] is None
    episode = (await rt.api.episode_get(a["episode_id"]))["episode"]
    assert episode["title"] == "Tabs"
    # the provisional episode, left with one member, was dissolved and is gone
    assert provisional["episode_id"] != a["episode_id"]
    listed = [e["id"] for e in (await rt.api.episodes_list())["episodes"]]
    assert listed == [a["episode_id"]]
    queue = rt.api.health()["episodes"]
    assert (queue["classify_calls"], queue["classified_memories"]) == (1, 3)
    assert queue["classify_waiting"] == 0


async def three_member_episode(runtime_factory: Any) -> tuple[Any, list[str], str]:  # noqa: F811
    """A hybrid runtime that asks nothing yet (doubt share 0), with three auth notes in one
    episode; reviews then go one memory a call, at once."""
    rt = await runtime_factory(
        detector_strategy="hybrid",
        llm_doubt_share=0.0,  # nothing doubtful while the thread forms
        classify_calls_per_memory=1.0,
        classify_batch_size=1,
        classify_batch_wait_seconds=0,
    )
    ids = [(await remember(rt, text, 3, 9 + i))["memory_id"] for i, text in enumerate(AUTH[:3])]
    await settle(rt)
    episode_id = (await rt.api.get_memory(ids[0]))["episode_id"]
    assert episode_id and all(
        [(await rt.api.get_memory(m))["episode_id"] == episode_id for m in ids]
    )
    return rt, ids, episode_id


def take_out_every_memory(request: Recorded) -> Reply:
    """The fake LLM's reviews: every memory asked about belongs to no thread."""
    if request.purpose != "classify":
        return default_reply(request)
    decisions = [{"memory_id": m, "action": "none"} for m, _ in new_memories(request.text)]
    return Reply.json({"decisions": decisions})


async def test_a_review_move_is_in_the_history_and_a_confirmed_place_is_kept(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """The LLM moves one member out of a three-member episode and confirms the others: the
    episode keeps its id and records the move; confirmed members stay."""
    rt, ids, episode_id = await three_member_episode(runtime_factory)
    fake_llm_env.responder = take_out_every_memory
    rt.episodes.engine.state.settings.llm_doubt_share = 1.0  # now ask about the next one
    late = (await remember(rt, AUTH[3], 3, 13))["memory_id"]
    assert (await rt.api.get_memory(late))["episode_id"] == episode_id  # placed at once
    await settle(rt)
    [call] = fake_llm_env.by_purpose("classify")
    assert [m for m, _ in new_memories(call.text)] == [late]
    assert (await rt.api.get_memory(late))["episode_id"] is None
    got = await rt.api.episode_get(episode_id)
    assert got["episode"]["memory_count"] == 3
    moves = [h for h in got["history"] if h["action"] == "review_move"]
    assert [(h["actor"], h["details"]["memory_id"]) for h in moves] == [("detector", late)]


async def test_a_review_rewrites_the_episode_a_memory_left_outside_the_detect_lock(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """Rewriting the episode a review moved a memory out of reads and embeds all of it: that
    is done after the review lets go of the detect lock, which every ``remember`` waits for;
    and not at all once the summary job has rewritten the episode in full."""
    rt, ids, episode_id = await three_member_episode(runtime_factory)
    engine = rt.episodes.engine
    rewrites: list[tuple[str, bool]] = []
    refresh = engine.summaries.refresh_extractive

    async def watched(episode: str) -> None:
        rewrites.append((episode, engine.state.detect_lock.locked()))
        await refresh(episode)

    engine.summaries.refresh_extractive = watched  # type: ignore[method-assign]
    fake_llm_env.responder = take_out_every_memory
    engine.state.settings.llm_doubt_share = 1.0
    late = (await remember(rt, AUTH[3], 3, 13))["memory_id"]
    assert (await rt.api.get_memory(late))["episode_id"] == episode_id
    await settle(rt)
    assert (await rt.api.get_memory(late))["episode_id"] is None  # the review moved it out
    assert rewrites == [(episode_id, False)]  # rewritten once, the detect lock free
    row = engine.state.store.episodes.get(episode_id)
    assert row is not None and not row.needs_full  # the summary job then wrote it in full
    await engine.membership.rewrite_left(episode_id)
    assert rewrites == [(episode_id, False)]  # nothing left to rewrite: not read again


async def test_a_batch_reads_each_member_once_for_its_options(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """Each memory of a review batch is judged against its episode without it; members read
    for one memory's options are not read again for the next one's (all under the detect
    lock), and the options are those of a fresh read."""
    rt = await runtime_factory(detector_strategy="embedding")
    ids = [(await remember(rt, text, 3, 9 + i))["memory_id"] for i, text in enumerate(AUTH[:3])]
    await settle(rt)
    engine = rt.episodes.engine
    state = engine.state
    assert len({(await rt.api.get_memory(m))["episode_id"] for m in ids}) == 1
    fresh = {f.id: f for f in await state.features(ids)}
    asked: list[list[str]] = []
    features = state.features

    async def watched(memory_ids: list[str]) -> list[Any]:
        asked.append(list(memory_ids))
        return await features(memory_ids)

    state.features = watched  # type: ignore[method-assign]
    read: dict[str, Any] = {}
    async with state.detect_lock:
        first = await engine.review._review_options(fresh[ids[0]], read)
        second = await engine.review._review_options(fresh[ids[1]], read)
        assert asked == [[ids[1], ids[2]], [ids[0]]]
        assert first == await engine.review._review_options(fresh[ids[0]], {})
        assert second == await engine.review._review_options(fresh[ids[1]], {})


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
        merge_checks=False,  # reviews alone: a merge check would spend the same budget
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
    for memory_id in ids:  # every memory placed at once
        assert (await rt.api.get_memory(memory_id))["episode_status"] != "pending"


async def test_when_the_llm_is_down_the_provisional_places_stand(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """The review call fails: nothing moves, nothing stays waiting, the health says why."""
    rt = await reviewing(runtime_factory, 2)
    fake_llm_env.responder = lambda request: (
        Reply.error(503) if request.purpose == "classify" else default_reply(request)
    )
    ids = [(await remember(rt, text, 3, 9 + i))["memory_id"] for i, text in enumerate(AUTH[:3])]
    before = [(await rt.api.get_memory(m))["episode_id"] for m in ids]
    await settle(rt)
    assert fake_llm_env.by_purpose("classify")  # it was asked ...
    after = [(await rt.api.get_memory(m))["episode_id"] for m in ids]
    assert after == before and after[1] is not None  # ... and the embedding places stand
    health = rt.api.health()
    assert health["episodes"]["classify_waiting"] == 0
    assert health["llm"]["state"] != "ok"


async def test_concurrent_writers_while_reviews_move_memories_keep_every_invariant(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """Ten writers at once while every review moves its memories (alternately out of any
    episode and into one new thread): no memory in two episodes, none lost, no empty episode,
    one summary memory per episode and no orphan."""
    from test_episode_edits import invariants

    rt = await reviewing(runtime_factory, 2)

    def answer(request: Recorded) -> Reply:
        if request.purpose != "classify":
            return default_reply(request)
        decisions = [  # both memories of a call into one new thread, or both out of any
            {"memory_id": m, "action": "create", "title": "Moved"}
            if len(fake_llm_env.by_purpose("classify")) % 2
            else {"memory_id": m, "action": "none"}
            for m, _ in new_memories(request.text)
        ]
        return Reply.json(classify_answer(*decisions, user=request.text))

    fake_llm_env.responder = answer
    texts = [*AUTH, *DB, *IOS]

    async def write(k: int, text: str) -> dict[str, Any]:
        return await remember(rt, text, 3 + k % 2, 9 + k)

    results = await asyncio.gather(*(write(k, t) for k, t in enumerate(texts)))
    await settle(rt)
    assert len(fake_llm_env.by_purpose("classify")) >= 2  # reviews ran and moved memories
    await invariants(rt, len(texts))
    for result in results:
        got = await rt.api.get_memory(result["memory_id"])
        assert got["episode_status"] in ("assigned", "unassigned")
    listed = (await rt.api.episodes_list())["episodes"]
    assert all(e["memory_count"] >= 1 for e in listed)
    assert "Moved" in {e["title"] for e in listed}  # the reviews' thread exists


async def test_checks_in_calls_of_their_own_do_not_starve_the_reviews(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """Merge and split checks asked in calls of their own spend the budget but classify no
    memory. The share of memories reviewed is paid for by the memories a *review* call
    carries: when such checks were the store's first calls, reviews must still be queued (they
    used to count as reviews of nothing, the share fell to 0 and no memory was reviewed
    again)."""
    rt = await runtime_factory(
        detector_strategy="hybrid",
        llm_doubt_share=0.0,  # no review while the store fills: the calls below are the first
        classify_calls_per_memory=0.3,
        classify_batch_size=2,
        merge_checks=False,
        split_checks=False,
    )
    for i, text in enumerate([*DB[:4], *AUTH[:4], *IOS][:10]):
        await remember(rt, text, 3, 9 + i)
    await settle(rt)
    rt.episodes.engine.state.settings.llm_doubt_share = 0.45
    budget = rt.episodes.engine.budget
    assert budget.counts() == {"memories": 10, "calls": 0, "reviews": 0, "classified": 0}
    assert budget.spend_call()  # a check alone: a call, no memory classified
    assert budget.doubt_share() == 0.3  # 0.3 calls a memory x 1 memory a call, not 0
    assert budget.spend_call(classified=2)  # a review of two
    assert budget.doubt_share() == 0.45  # 0.3 x 2 = 0.6, capped by the doubt share
    assert budget.spend_call()  # another check alone: still two memories a review
    assert budget.counts() == {"memories": 10, "calls": 3, "reviews": 1, "classified": 2}
    assert budget.doubt_share() == 0.45


async def test_a_memory_under_review_is_never_shown_as_a_candidate(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """Two doubtful memories reviewed in one call, the first still a seed: the prompt's
    candidates are a union over the batch, and the seed is a candidate of the second. Shown, it
    is also a candidate of itself, with its own text, and an LLM "joins" it (the memory stays
    alone). It is left out; memories of one call that start a thread together share a
    ``create`` title, and end in one episode."""
    rt = await reviewing(runtime_factory, 2)
    await remember(rt, DB[0], 3, 9)  # no candidate: a seed, no review
    fake_llm_env.responder = create_all("Refresh tokens")
    # unrelated to each other and to the first: each stays a seed until the review
    ids = [
        (await remember(rt, text, 3, 10 + i))["memory_id"]
        for i, text in enumerate([AUTH[0], UNRELATED])
    ]
    await settle(rt)
    [call] = fake_llm_env.by_purpose("classify")
    assert [m for m, _ in new_memories(call.text)] == ids
    shown = set(candidate_ids(call.text))
    assert shown and not shown & {"thread-" + m for m in ids}  # the first seed only
    a, b = [await rt.api.get_memory(m) for m in ids]
    assert a["episode_id"] is not None and a["episode_id"] == b["episode_id"]
    episode = (await rt.api.episode_get(a["episode_id"]))["episode"]
    assert (episode["title"], episode["memory_count"]) == ("Refresh tokens", 2)


UNRELATED = "Team lunch moved to Thursday; the ficus by the office window needs water on Fridays."


def create_all(title: str):
    def answer(request: Recorded) -> Reply:
        if request.purpose != "classify":
            return default_reply(request)
        decisions = [
            {"memory_id": m, "action": "create", "title": title}
            for m, _ in new_memories(request.text)
        ]
        return Reply.json(classify_answer(*decisions, user=request.text))

    return answer


def candidate_ids(text: str) -> list[str]:
    candidates = text.partition("<candidates>")[2].partition("</candidates>")[0]
    return [episode_id for episode_id, _ in EPISODE_RE.findall(candidates)]


async def test_a_reviewed_memory_is_judged_against_its_episode_without_it(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """Two doubtful memories placed together at once, then reviewed in one call: their episode
    is a candidate, shown without them: neither their text (its summary was written with
    them) nor their ids appear among the candidates."""
    rt = await reviewing(runtime_factory, 2)
    await remember(rt, DB[0], 3, 9)
    fake_llm_env.responder = create_all("Logouts")
    texts = [AUTH[0], IOS[0]]
    ids = [(await remember(rt, t, 3, 10 + i))["memory_id"] for i, t in enumerate(texts)]
    provisional = (await rt.api.get_memory(ids[1]))["episode_id"]
    assert provisional is not None  # the embeddings put the two logout notes together
    await settle(rt)
    [call] = fake_llm_env.by_purpose("classify")
    shown = call.text.partition("<candidates>")[2].partition("</candidates>")[0]
    assert provisional in candidate_ids(call.text)
    for memory_id, text in zip(ids, texts, strict=True):
        assert memory_id not in shown and html.escape(text, quote=False)[:60] not in shown


class HeldCall:
    """A store where two doubtful memories filled a batch whose call is out (the fake LLM
    holds its answer until :meth:`release`), and a third was queued meanwhile."""

    def __init__(self, rt: Any, fake: Any) -> None:
        self.rt, self.fake = rt, fake
        self.out, self.released = threading.Event(), threading.Event()
        self.first: list[str] = []
        self.late = ""

    def answer(self, request: Recorded) -> Reply:
        if request.purpose != "classify":
            return default_reply(request)
        self.out.set()
        self.released.wait(30)  # the call stays out until the test lets it answer
        decisions = [{"memory_id": m, "action": "none"} for m, _ in new_memories(request.text)]
        return Reply.json(classify_answer(*decisions, user=request.text))

    async def start(self) -> None:
        self.fake.responder = self.answer
        await remember(self.rt, DB[0], 3, 9)  # no candidate: a seed, no review
        for i, text in enumerate(AUTH[:2]):
            self.first.append((await remember(self.rt, text, 3, 10 + i))["memory_id"])
        assert await asyncio.to_thread(self.out.wait, 30), "the full batch was not asked"
        self.late = (await remember(self.rt, AUTH[2], 3, 12))["memory_id"]

    async def release(self) -> None:
        """Let the call answer and wait for the work due now (the clock stands still)."""
        self.released.set()
        assert await self.rt.episodes.worker.drain(30, due_only=True)

    def asked(self) -> list[list[str]]:
        return [[m for m, _ in new_memories(c.text)] for c in self.fake.by_purpose("classify")]


async def held_call(runtime_factory: Any, fake: Any) -> HeldCall:  # noqa: F811
    rt = await runtime_factory(
        detector_strategy="llm",  # every memory with a candidate is doubtful
        classify_calls_per_memory=1.0,
        classify_batch_size=2,
        classify_batch_wait_seconds=3600,  # the clock stands still: only a full batch asks
    )
    held = HeldCall(rt, fake)
    await held.start()
    return held


async def test_a_memory_queued_while_a_call_is_out_waits_for_company(
    runtime_factory,  # noqa: F811
    fake_llm_env,
) -> None:
    """The two memories of the call out hold their jobs until it is over, but they are not
    company for a third queued meanwhile: counted, the batch looked full and the third was
    asked alone, which spends the budget twice as fast."""
    held = await held_call(runtime_factory, fake_llm_env)
    await held.release()
    assert held.asked() == [held.first]
    assert held.rt.api.health()["episodes"]["classify_waiting"] == 1  # the late one waits
    await settle(held.rt)  # flushed: asked now, in a call of its own (nothing else waits)
    assert held.asked() == [held.first, [held.late]]


async def test_a_job_whose_memory_a_call_reviewed_meanwhile_asks_nothing(
    runtime_factory,  # noqa: F811
    fake_llm_env,
    monkeypatch,
) -> None:
    """The second memory's job fell due with the full batch, but the first memory's job took
    both into its call. Started while that call is out and slow to read the memories, the
    second job must find its memory reviewed when it gets on, not ask for the waiting third
    alone (it did when the call was over by then)."""
    held = await held_call(runtime_factory, fake_llm_env)
    review = held.rt.episodes.engine.review
    slow = contextvars.ContextVar("slow", default=False)  # set in this test's job only
    reading, go_on = asyncio.Event(), asyncio.Event()
    read = review.state.host.get_memories

    async def get_memories(ids: list[str]) -> Any:
        if slow.get():
            reading.set()
            await go_on.wait()
        return await read(ids)

    monkeypatch.setattr(review.state.host, "get_memories", get_memories)
    context = contextvars.copy_context()
    context.run(slow.set, True)
    job = asyncio.create_task(review.classify(held.first[1]), context=context)
    # the job has started and is reading the memories (the bound turns a hang into a failure)
    await asyncio.wait_for(reading.wait(), 30)
    await held.release()  # meanwhile the call answers and is over
    go_on.set()
    await job
    assert held.asked() == [held.first]
    assert held.rt.api.health()["episodes"]["classify_waiting"] == 1  # the late one waits


async def test_the_budget_saves_a_call_at_once_and_decisions_every_25(
    runtime_factory,  # noqa: F811
):
    """Decisions are counted in memory and saved every 25 (a crash forgets at most 24, which
    only lowers the budget); a call is saved at once, so no crash lets it be overspent."""
    rt = await runtime_factory(detector_strategy="embedding")
    budget = rt.episodes.engine.budget
    store = rt.episodes.store

    def saved() -> dict:
        return store.get_meta(BUDGET_KEY) or {}

    areas = ["billing", "search", "shipping", "profile", "reports"]
    changes = ["timeouts 30 s", "retries capped", "cache warmed", "JSON logs", "on-call alerts"]
    texts = [f"The {a} service now has {c}." for a in areas for c in changes]
    for i, text in enumerate(texts[:24]):
        await rt.api.remember(text, created_at=f"2025-03-03T{i:02d}:00:00Z", skip_dedup=True)
    assert budget.counts()["memories"] == 24
    assert saved().get("memories", 0) == 0  # not one transaction per memory
    await remember(rt, texts[24], 4)
    assert saved()["memories"] == 25
    assert budget.spend_call()
    assert saved() == {"memories": 25, "calls": 1, "reviews": 0, "classified": 0}


async def test_a_batch_that_fails_while_it_is_gathered_lets_every_memory_go(
    runtime_factory,  # noqa: F811
    fake_llm_env,
    monkeypatch,
) -> None:
    """A batch claims its memories at once and finds their options one at a time; when that
    fails midway, none stays claimed: a claim left behind would have each memory's own job
    wait for a call that never comes. The next try reviews the three in one call."""
    rt = await reviewing(runtime_factory, 3)
    await remember(rt, DB[0], 3, 9)
    doubtful = [
        (await remember(rt, text, 3, 10 + i))["memory_id"] for i, text in enumerate(AUTH[:3])
    ]
    review = rt.episodes.engine.review
    options = review._review_options
    calls = 0

    async def fails_at_the_second(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("the store went away")
        return await options(*args)

    monkeypatch.setattr(review, "_review_options", fails_at_the_second)
    try:
        await review.classify(doubtful[0])
    except RuntimeError:
        pass
    else:
        raise AssertionError("the failure was not raised")
    assert calls == 2 and review._asking == {}
    assert fake_llm_env.by_purpose("classify") == []
    monkeypatch.setattr(review, "_review_options", options)
    await settle(rt)
    [call] = fake_llm_env.by_purpose("classify")
    assert sorted(m for m, _ in new_memories(call.text)) == sorted(doubtful)
