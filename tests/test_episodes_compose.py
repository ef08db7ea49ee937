"""Episodes that compose: LLM summaries and metadata, chains, replay, search, timelines."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import pytest
from test_episodes_engine import AUTH, DB, Clock, remember, settle

from tribalmemory.config import config_from_dict
from tribalmemory.errors import InvalidInput, NotFound
from tribalmemory.runtime import Runtime, start_runtime

IOS = [
    "iOS app: users are logged out after the refresh token rotation fix, the Swift client "
    "retries /auth/refresh with the old refresh token.",
    "iOS client refresh token handling: single-flight refresh in the Swift networking layer "
    "so the rotated refresh token is not reused.",
]


@pytest.fixture
async def runtime_factory(tmp_path) -> AsyncIterator[Callable[..., Any]]:
    started: list[Runtime] = []

    async def make(clock: Clock | None = None, **episodes: Any) -> Runtime:
        settings = {"summary_debounce_seconds": 0}
        settings.update(episodes)
        config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": settings})
        runtime = await start_runtime(
            config,
            clock=clock or Clock(),
            run_scheduler=False,
            llm_options={"backoff_base": 0.01, "backoff_max": 0.05},  # fast retries
        )
        await runtime.episodes.summariser.check()
        started.append(runtime)
        return runtime

    yield make
    for runtime in started:
        await runtime.stop()


async def test_llm_summaries_titles_and_final_metadata(runtime_factory, fake_llm_env):
    rt = await runtime_factory(detector_strategy="embedding", llm_update_every=2)
    ids = []
    for i in range(2):
        ids.append((await remember(rt, AUTH[i], 3 + i, tags=["auth"]))["memory_id"])
    await settle(rt)
    (episode,) = (await rt.api.episodes_list())["episodes"]
    assert episode["summary_kind"] == "llm"  # first LLM summary once it has 2 memories
    assert len(fake_llm_env.by_purpose("regenerate")) == 1
    assert any(AUTH[0][:40] in r.text for r in fake_llm_env.by_purpose("regenerate"))
    ids.append((await remember(rt, AUTH[2], 5, tags=["auth"]))["memory_id"])
    await settle(rt)  # one new memory: an interim summary, no LLM call
    (episode,) = (await rt.api.episodes_list())["episodes"]
    assert "New since this summary (2025-03-05):" in episode["summary"]  # its span, once
    assert fake_llm_env.by_purpose("update") == []
    ids.append((await remember(rt, AUTH[3], 6, tags=["auth"]))["memory_id"])
    await settle(rt)  # two new memories: a cheap update with just those two
    (update,) = fake_llm_env.by_purpose("update")
    user = " ".join(m["content"] for m in update.messages if m["role"] == "user")
    new_items = user.split("<memory")[1:]
    assert len(new_items) == 2  # only the memories added since the last LLM summary
    assert AUTH[2][:40] in new_items[0] and AUTH[3][:40] in new_items[1]
    await rt.api.episode_close(episode["id"])
    await settle(rt)
    got = (await rt.api.episode_get(episode["id"]))["episode"]
    assert got["status"] == "closed" and got["summary_kind"] == "llm"
    assert fake_llm_env.by_purpose("final")
    meta = got["metadata"]
    assert meta["source"] == "llm"
    assert meta["outcome"] in {"success", "failure", "partial", "ongoing", "unknown"}
    for key in ("participants", "tools_used", "entities", "key_decisions", "tags"):
        assert isinstance(meta[key], list)
    costs = await rt.api.episode_costs()
    assert costs["calls"] == len(fake_llm_env.requests)
    assert costs["by_episode"][episode["id"]] > 0
    assert got["cost_usd"] == pytest.approx(costs["by_episode"][episode["id"]], abs=1e-6)
    members = (await rt.api.episode_get(episode["id"]))["memory_ids"]
    assert members == ids  # the one episode holds the four memories, in time order


async def test_without_llm_metadata_falls_back(runtime_factory, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt = await runtime_factory(detector_strategy="embedding")
    a = [await remember(rt, AUTH[i], 3 + i, tags=["auth"]) for i in range(2)]
    await settle(rt)
    await rt.api.episode_close(a[0]["episode_id"] or a[1]["episode_id"])
    await settle(rt)
    got = (await rt.api.episode_get(a[1]["episode_id"]))["episode"]
    assert got["summary_kind"] == "extractive"
    assert got["metadata"]["source"] == "extractive"
    assert got["metadata"]["participants"] == ["default"]
    assert "auth" in got["metadata"]["tags"]
    health = rt.api.health()
    assert health["llm"]["state"] == "offline" and "fallback" in health["llm"]


async def test_chain_links_a_follow_up_to_a_recently_closed_episode(runtime_factory, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt = await runtime_factory(detector_strategy="embedding", chain_similarity_threshold=0.5)
    a = [await remember(rt, AUTH[i], 3, 9 + i) for i in range(3)]
    parent = a[1]["episode_id"]
    await rt.api.episode_close(parent)
    await settle(rt)
    b = [await remember(rt, IOS[i], 5, 9 + i) for i in range(2)]
    child = b[1]["episode_id"]
    assert child and child != parent
    # The parent is looked for by a durable job, after the request that created the episode.
    store = rt.episodes.store
    assert [r[0] for r in store.db.execute("SELECT key FROM jobs WHERE kind = 'link'")] == [child]
    await settle(rt)
    got = (await rt.api.episode_get(child))["episode"]
    assert got["parent_episode_id"] == parent
    chain = await rt.api.episode_chain(child)
    assert [e["id"] for e in chain["chain"]] == [parent, child]
    assert chain["root_id"] == parent
    assert [e["id"] for e in (await rt.api.episode_chain(parent))["chain"]] == [parent, child]


AUTH_AGAIN = [
    AUTH[3],
    "Multi-tab logout follow-up: the 10 second grace window for the previous refresh token "
    "shipped; Sentry shows no more 'refresh token revoked' 401s after a refresh.",
]


async def test_a_continuation_in_the_same_words_chains_early_in_a_stream(
    runtime_factory, monkeypatch
):
    """Issue 40, item 13: a thread closed by hand (one memory taken out of it first) and taken
    up again 23 hours later in the same words gets its parent, at the default threshold,
    though the young stream's background is still wide (centroid cosine 0.73 scored 0.83);
    an unrelated episode the day after gets none."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt = await runtime_factory(detector_strategy="embedding")
    a = [await remember(rt, AUTH[i], 3, 9 + i) for i in range(3)]
    parent = a[1]["episode_id"]
    assert parent is not None
    await rt.api.episode_remove(parent, a[2]["memory_id"])  # left loose
    await rt.api.episode_close(parent)
    await settle(rt)
    b = [await remember(rt, AUTH_AGAIN[i], 4, 10 + i) for i in range(2)]
    await settle(rt)
    child = b[1]["episode_id"]
    assert child not in (None, parent)
    assert (await rt.api.episode_get(child))["episode"]["parent_episode_id"] == parent
    await rt.api.episode_close(child)
    d = [await remember(rt, DB[i], 5, 10 + i) for i in range(2)]
    await settle(rt)
    other = d[1]["episode_id"]
    assert other not in (None, parent, child)
    assert (await rt.api.episode_get(other))["episode"]["parent_episode_id"] is None


async def test_a_late_link_job_decides_on_the_episode_as_it_started(runtime_factory, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt = await runtime_factory(detector_strategy="embedding", chain_similarity_threshold=0.5)
    a = [await remember(rt, AUTH[i], 3, 9 + i) for i in range(3)]
    parent = a[1]["episode_id"]
    await rt.api.episode_close(parent)
    await settle(rt)
    await rt.episodes.worker.stop()  # from here on a job runs only when the test runs it
    b = [await remember(rt, IOS[i], 5, 9 + i) for i in range(2)]
    child = b[1]["episode_id"]
    store = rt.episodes.store
    (job,) = [j for j in store.jobs.due(4e9, set(), limit=50) if j.kind == "link"]
    # The episode as it started: its first memories, and the episodes that had ended by then.
    assert job.key == child
    assert job.payload == {"members": [m["memory_id"] for m in b], "candidates": [parent]}
    # Before the job runs (a fast import), the new episode is closed, and another episode of
    # memories older than its first one starts and is closed.
    await rt.api.episode_close(child)
    d = [await remember(rt, DB[i], 4, 9 + i) for i in range(2)]
    await rt.api.episode_close(d[1]["episode_id"])
    link = rt.episodes.engine.job_handlers()["link"]
    await link(job)
    assert store.episodes.get(child).parent_episode_id == parent
    # A link job queued by an older version has no payload: the candidates are looked up now.
    with store.transaction() as db:
        store.episodes.update(db, child, parent_episode_id=None)
    await link(replace(job, payload={}))
    assert store.episodes.get(child).parent_episode_id == parent


async def test_explicit_parent_and_cycle_safety(runtime_factory, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt = await runtime_factory(detector_strategy="embedding")
    m = [(await remember(rt, text, 3 + i))["memory_id"] for i, text in enumerate(DB[:2])]
    first = (await rt.api.episode_create("first", [m[0]]))["episode_id"]
    second = await rt.api.episode_create("second", [m[1]], parent_episode_id=first)
    with pytest.raises(NotFound):
        await rt.api.episode_create("x", [m[0]], parent_episode_id="ep-0000000000000000")
    store = rt.episodes.store  # force a cycle the API cannot create, the walk must end
    with store.transaction() as db:
        store.episodes.update(db, first, parent_episode_id=second["episode_id"])
    chain = await rt.api.episode_chain(first)
    assert sorted(e["id"] for e in chain["chain"]) == sorted([first, second["episode_id"]])


async def test_replay_is_chronological_and_readable(runtime_factory, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt = await runtime_factory(detector_strategy="embedding")
    for i in range(2):
        await remember(rt, IOS[i], 3, 9 + i)
    for i in range(2):
        await remember(rt, DB[i], 6, 9 + i)
    for i in range(2):  # the same topic again after the window: a second episode
        await remember(rt, AUTH[i], 25, 9 + i)
    await settle(rt)
    replay = await rt.api.episodes_replay("refresh token logout", limit=5)
    starts = [e["start"] for e in replay["episodes"]]
    assert starts == sorted(starts) and len(starts) >= 2
    assert all("refresh" in (e["summary"] + e["title"]).lower() for e in replay["episodes"])
    assert replay["text"].startswith("Episodes about 'refresh token logout'")
    with pytest.raises(InvalidInput):
        await rt.api.episodes_replay("refresh", limit=0)


async def test_replay_shows_the_outcome_that_list_and_get_show(runtime_factory, monkeypatch):
    """Issue 40.11: replay took the outcome from ``metadata.outcome`` while list and get use the
    episode's (its structured record's first): a ``success`` episode replayed as [unknown]."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt = await runtime_factory(detector_strategy="embedding")
    stored = [await remember(rt, AUTH[i], 3, 9 + i) for i in range(2)]
    await settle(rt)
    episode_id = stored[1]["episode_id"]
    await rt.api.episode_close(episode_id)
    await rt.api.episode_update(episode_id, structured={"outcome": "success"})
    await settle(rt)
    got = (await rt.api.episode_get(episode_id))["episode"]
    assert got["outcome"] == "success" and got["metadata"].get("outcome") != "success"
    listed = (await rt.api.episodes_list(status="closed"))["episodes"]
    assert [e["outcome"] for e in listed if e["id"] == episode_id] == ["success"]
    replay = await rt.api.episodes_replay("refresh token logout", limit=5)
    assert [e["outcome"] for e in replay["episodes"] if e["id"] == episode_id] == ["success"]
    (line,) = [line for line in replay["text"].splitlines() if got["title"] in line]
    assert line.endswith(" [success]"), replay["text"]


@pytest.mark.parametrize("case", ["none", "time", "status", "both"])
async def test_search_with_every_filter_combination(runtime_factory, monkeypatch, case):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt = await runtime_factory(detector_strategy="embedding")
    early = [await remember(rt, AUTH[i], 3, 9 + i) for i in range(2)]
    late = [await remember(rt, AUTH[i], 25, 9 + i) for i in range(2, 4)]  # closes `early`
    await settle(rt)
    early_id, late_id = early[1]["episode_id"], late[1]["episode_id"]
    assert early_id != late_id
    kwargs: dict[str, Any] = {}
    if case in ("time", "both"):
        kwargs.update(time_start="2025-03-20T00:00:00", time_end="2025-03-31T00:00:00Z")
    if case in ("status", "both"):
        kwargs["status"] = "closed"
    found = await rt.api.episodes_search("refresh token logout", limit=10, **kwargs)
    ids = [e["id"] for e in found["episodes"]]
    expected = {
        "none": {early_id, late_id},
        "time": {late_id},
        "status": {early_id},
        "both": set(),
    }[case]
    assert set(ids) == expected
    assert all(len(e["summary"]) <= 500 for e in found["episodes"])


async def test_search_rejects_bad_ranges(runtime_factory, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt = await runtime_factory(detector_strategy="embedding")
    with pytest.raises(InvalidInput):
        await rt.api.episodes_search("x", time_start="2025-03-10", time_end="2025-03-01")
    with pytest.raises(InvalidInput):
        await rt.api.episodes_search("x", time_start="yesterday")
    with pytest.raises(InvalidInput):
        await rt.api.episodes_search("x", limit=51)


async def test_timeline_has_times_tags_and_surprise(runtime_factory, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt = await runtime_factory(detector_strategy="embedding")
    a = [await remember(rt, AUTH[i], 3 + i, tags=["auth"]) for i in range(3)]
    await settle(rt)
    got = await rt.api.episode_get(a[2]["episode_id"], include_timeline=True)
    timeline = got["timeline"]
    assert [t["memory_id"] for t in timeline] == got["memory_ids"]
    assert [t["created_at"][:10] for t in timeline] == ["2025-03-03", "2025-03-04", "2025-03-05"]
    joined = [t for t in timeline if t["surprise"] is not None]
    assert joined and all(0.0 <= t["surprise"] <= 1.0 for t in joined)
    assert all(t["key_moment"] == (t["surprise"] >= 0.7) for t in joined)
    assert (await rt.api.episode_get(a[2]["episode_id"]))["timeline"] is None


async def test_llm_faults_fall_back_without_losing_work(runtime_factory, fake_llm_env):
    """Garbage JSON, 500s and a hallucinated episode id: every memory still lands somewhere,
    summaries fall back to extractive, and each failed attempt is in the ledger."""
    from fakellm import Reply, new_memories

    rt = await runtime_factory(
        detector_strategy="llm",
        max_retries=1,
        classify_calls_per_memory=1.0,
        classify_batch_size=1,  # one call per doubtful memory: the script below is per call
        classify_batch_wait_seconds=0,
    )
    fake_llm_env.script(Reply.garbage(), Reply.garbage())  # classify 1: invalid twice

    def invented(request):  # then classify 2: a hallucinated episode id, twice
        if request.purpose != "classify" or len(fake_llm_env.by_purpose("classify")) > 4:
            return Reply.error(500)  # summaries, and then everything: the provider is down
        text = request.messages[1]["content"]
        join = {"action": "join", "episode_id": "ep-invented00000"}
        return Reply.json({"decisions": [{"memory_id": i, **join} for i, _ in new_memories(text)]})

    fake_llm_env.responder = invented
    ids = [(await remember(rt, AUTH[i], 3, 9 + i, tags=["auth"]))["memory_id"] for i in range(3)]
    await settle(rt)
    for memory_id in ids:
        memory = await rt.api.get_memory(memory_id)
        assert memory["episode_status"] in ("assigned", "unassigned")  # decided, not pending
    episodes = (await rt.api.episodes_list())["episodes"]
    assert all(e["summary_kind"] == "extractive" and e["summary"] for e in episodes)
    assert not any(e["id"] == "ep-invented00000" for e in episodes)
    costs = await rt.api.episode_costs()
    assert costs["failed_calls"] >= 4
    assert costs["calls"] + costs["denied_calls"] >= len(fake_llm_env.requests)
    assert rt.api.health()["episodes"]["queue_depth"] == 0
