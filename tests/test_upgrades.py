"""Summaries written during an LLM outage are upgraded when it returns (issue 40.6): before,
they stayed extractive until their episode got new work (0 calls in 150 s idle after the
recovery).

Through the real engine and the real litellm client against the fake LLM: it answers 503 while
two episodes are closed (their final summaries fall back to extractive), then answers again;
nothing else happens, and both episodes get their LLM summary: the first through the re-probe
of the outage, the second through the worker once the LLM is ready, each call in the ledger.
"""

from __future__ import annotations

import asyncio
import time

from fakellm import FakeLLM, Reply, default_reply
from test_episodes_engine import AUTH, DB, remember

from tribalmemory.runtime import Runtime

DEADLINE = 30.0  # bounds a wait; the re-probe comes within 0.5 s of the recovery here
FAST_PROBES = {"probe_first": 0.1, "probe_max": 0.5}


async def kinds(rt: Runtime) -> dict[str, str]:
    episodes = (await rt.api.episodes_list(status="closed"))["episodes"]
    return {e["id"]: e["summary_kind"] for e in episodes}


async def test_summaries_written_during_an_outage_are_upgraded_when_the_llm_returns(
    engine_runtime, fake_llm_env: FakeLLM
) -> None:
    fake_llm_env.responder = lambda request: Reply.error(503, "provider down")
    rt: Runtime = await engine_runtime(client_kw=FAST_PROBES, max_retries=0)
    for i, text in enumerate(AUTH[:3]):
        await remember(rt, text, 3, 9 + i)
    for i, text in enumerate(DB[:3]):
        await remember(rt, text, 4, 9 + i)
    assert await rt.episodes.worker.drain(DEADLINE)
    episodes = [e["id"] for e in (await rt.api.episodes_list())["episodes"]]
    assert len(episodes) == 2
    for episode in episodes:
        await rt.api.episode_close(episode)
    assert await rt.episodes.worker.drain(DEADLINE)
    assert await kinds(rt) == dict.fromkeys(episodes, "extractive")
    assert rt.api.health()["llm"]["state"] == "unreachable"
    assert fake_llm_env.calls > 0

    fake_llm_env.responder = default_reply  # the provider is back; no new work arrives
    upgraded = dict.fromkeys(episodes, "llm")
    end = time.monotonic() + DEADLINE
    while await kinds(rt) != upgraded:
        assert time.monotonic() < end, f"still extractive {DEADLINE} s after the LLM returned"
        await asyncio.sleep(0.05)
    assert await rt.episodes.worker.drain(DEADLINE)
    assert rt.api.health()["llm"]["state"] == "ready"
    assert rt.episodes.engine.upgrades.waiting() == []
    answered = [r for r in rt.episodes.ledger.rows() if r["outcome"] == "ok"]
    assert sorted(r["episode_id"] for r in answered) == sorted(episodes)  # one each, no more
    assert {r["purpose"] for r in answered} == {"final"}
    costs = await rt.api.episode_costs()
    assert costs["calls"] == fake_llm_env.calls  # every request went through the ledger
    assert all(costs["by_episode"].get(e, 0) > 0 for e in episodes)
    assert costs["spend_usd"] <= costs["ceiling_usd"]


async def test_offline_summaries_never_wait_for_an_llm(engine_runtime, monkeypatch) -> None:
    """Without a key nothing is marked: there is no LLM to come back."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt: Runtime = await engine_runtime()
    for i, text in enumerate(AUTH[:3]):
        await remember(rt, text, 3, 9 + i)
    (episode,) = [e["id"] for e in (await rt.api.episodes_list())["episodes"]]
    await rt.api.episode_close(episode)
    assert await rt.episodes.worker.drain(DEADLINE)
    assert await kinds(rt) == {episode: "extractive"}
    assert rt.episodes.engine.upgrades.waiting() == []
