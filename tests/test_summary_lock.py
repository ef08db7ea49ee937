"""A summary job does not hold its episode's lock while it waits: not during the LLM call,
not for a background turn, not for the low-priority embedder. Moves, merges and splits take
an episode's lock under the detect lock, and every ``remember`` waits for the detect lock: a
lock held through a 5 s LLM call stalled every write for 5 s. What the job computed without
the lock is written only if nobody took the lock meanwhile; else the job runs again.

Real engine, real litellm client, the fake LLM server holding its answer until told."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from fakellm import FakeLLM, Recorded, Reply, default_reply
from helpers_runtime import settle

from tribalmemory.models import Memory
from tribalmemory.runtime import Runtime
from tribalmemory.shapes import MemoriesListQuery

SETTINGS = {"llm_update_every": 1, "merge_checks": False, "split_checks": False}
HANG_GUARD = 30.0  # seconds: only bounds a hang of the old code; the fix answers in well under 1

AUTH = [
    "Mobile login: refresh tokens rotate on every use and the app retries on 401 responses.",
    "Mobile login: two parallel refreshes present the same token and the second one is revoked.",
]
BILLING = [
    "Billing export: the monthly invoice CSV misses credit notes issued after the 28th.",
    "Billing export: credit notes are filtered by issue date instead of the invoice period.",
]
SECRET = "the staging password is quokka-7731"


class HeldAnswers:
    """A responder that holds every summary answer until :meth:`release`; ``asked`` is set
    when the first summary request has arrived."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.released = threading.Event()

    def __call__(self, request: Recorded) -> Reply:
        if request.purpose in ("regenerate", "update", "final"):
            self.asked.set()
            self.released.wait(HANG_GUARD)
        return default_reply(request)

    def release(self) -> None:
        self.released.set()


async def episode_of(rt: Runtime, title: str, texts: list[str]) -> tuple[str, list[str]]:
    ids = [(await rt.api.remember(t, skip_dedup=True))["memory_id"] for t in texts]
    created = await rt.api.episode_create(title, ids)
    return created["episode_id"], ids


async def summary_memories(rt: Runtime) -> list[Memory]:
    return (
        await rt.service.list_memories(MemoriesListQuery(source_type="episode_summary", limit=100))
    )[0]


async def held_summary(rt: Runtime, fake: FakeLLM, episode_id: str) -> HeldAnswers:
    """Start the episode's summary job and return once its LLM call is out (and held)."""
    held = HeldAnswers()
    fake.responder = held
    await rt.api.episode_regenerate(episode_id)
    assert await asyncio.to_thread(held.asked.wait, HANG_GUARD), "no summary call was made"
    return held


async def test_remember_does_not_wait_for_a_summary_call_behind_a_merge(
    engine_runtime, fake_llm_env: FakeLLM
) -> None:
    rt = await engine_runtime(**SETTINGS)
    auth, _ = await episode_of(rt, "Mobile login refresh", AUTH)
    billing, _ = await episode_of(rt, "Billing export credit notes", BILLING)
    await settle(rt)
    held = await held_summary(rt, fake_llm_env, auth)
    try:
        # The merge takes the detect lock, then both episodes' locks.
        merge = asyncio.create_task(rt.api.episode_merge(billing, auth))
        detect_lock = rt.episodes.engine.state.detect_lock
        while not (merge.done() or detect_lock.locked()):
            await asyncio.sleep(0)  # let the merge start (a yield, not a wait for time)
        written = await asyncio.wait_for(
            # another project's memory: it waits for the same detect lock, and joins nothing here
            rt.api.remember("Release notes for 4.2 are drafted in the wiki.", project="docs"),
            HANG_GUARD,
        )
        assert written["memory_id"]
        assert not held.released.is_set()  # remember returned while the LLM call was out
        merged = await asyncio.wait_for(merge, HANG_GUARD)
    finally:
        held.release()
    await settle(rt)
    survivor = (await rt.api.episode_get(merged["episode_id"]))["episode"]
    assert survivor["memory_count"] == 4
    gone = merged["absorbed_id"]
    assert not [
        m for m in await summary_memories(rt) if m.metadata.get("episode_id") == gone
    ]  # no orphan summary memory of the absorbed episode


async def test_a_member_removed_during_the_call_is_not_in_the_summary_written_after_it(
    engine_runtime, fake_llm_env: FakeLLM
) -> None:
    """The held answer quotes every member it was shown, the removed one too: it is set
    aside, and the job runs again on the members that are left."""
    rt = await engine_runtime(**SETTINGS)
    auth, ids = await episode_of(rt, "Mobile login refresh", [*AUTH, f"Mobile login: {SECRET}."])
    await settle(rt)
    held = await held_summary(rt, fake_llm_env, auth)
    try:
        await asyncio.wait_for(rt.api.episode_remove(auth, ids[-1]), HANG_GUARD)
        assert not held.released.is_set()  # the removal did not wait for the call either
    finally:
        held.release()
    await settle(rt)
    got = (await rt.api.episode_get(auth))["episode"]
    assert got["memory_count"] == 2 and got["summary_kind"] == "llm"
    assert "quokka" not in str(got)
    summaries = await summary_memories(rt)
    assert summaries and all("quokka" not in m.content for m in summaries)
    last = fake_llm_env.by_purpose("regenerate")[-1]
    assert "quokka" not in last.text  # the job ran again without the removed member


async def test_a_summary_rewritten_under_a_lock_does_not_wait_for_the_low_priority_embedder(
    engine_runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A removal rewrites the episode's summary holding its lock (and a detector's move holds
    the detect lock too): that embedding goes at request priority. The low-priority embedder
    is starved here (it never answers, as on a machine kept busy by other processes until
    its fallback deadline); the removal completes all the same, summary memory rewritten."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)  # extractive summaries: no LLM to wait for
    rt = await engine_runtime(**SETTINGS)
    auth, ids = await episode_of(rt, "Mobile login refresh", [*AUTH, f"Mobile login: {SECRET}."])
    await settle(rt)
    starved = asyncio.Event()

    async def never(texts: list[str]) -> Any:
        await starved.wait()  # never set: the low-priority thread gets no CPU

    monkeypatch.setattr(rt.service, "embed_background", never)
    await asyncio.wait_for(rt.api.episode_remove(auth, ids[-1]), HANG_GUARD)
    summaries = [m for m in await summary_memories(rt) if m.metadata.get("episode_id") == auth]
    assert len(summaries) == 1 and "quokka" not in summaries[0].content
