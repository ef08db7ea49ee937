"""Races never 500 and counts equal real membership (issue 18, point 2): concurrent forget,
episode add, create and delete through the API on the real service and episode engine; and the
reconciliation of dangling memberships at start and on the scheduler's tick.

Each race is forced into both of its orders, without sleeps, and both outcomes are checked: a
test plugin holds ``forget`` in its ``after_forget`` hook (the memory is deleted, the episode
engine has not heard of it yet; :class:`ForgetHooks`), and a gate on a store call holds an add,
create or episode deletion inside the engine's locks (:class:`Gate`)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tribalmemory.config import config_from_dict
from tribalmemory.episodes.store import EpisodeStore
from tribalmemory.errors import TribalError
from tribalmemory.models import Memory, SourceType
from tribalmemory.runtime import Runtime, start_runtime
from tribalmemory.service.hookspecs import hookimpl
from tribalmemory.service.service_host import ServiceHost

BOUND = 30.0  # bounds a hang: every step waited on is immediate once released
T = TypeVar("T")


def make_config(tmp_path: Path) -> Any:
    return config_from_dict(
        {
            "data_dir": str(tmp_path / "data"),
            "episodes": {"detector_strategy": "embedding", "summary_debounce_seconds": 0},
        }
    )


class Pause:
    """``reached`` is set when the paused call gets to its seam; it goes on once ``release``
    is set (the seam runs on a thread when ``threaded``)."""

    def __init__(self, threaded: bool = False) -> None:
        self.loop = asyncio.get_running_loop()
        self.reached = asyncio.Event()
        self.release: threading.Event | asyncio.Event = (
            threading.Event() if threaded else asyncio.Event()
        )

    async def wait_reached(self) -> None:
        await asyncio.wait_for(self.reached.wait(), BOUND)

    def arrive_threaded(self) -> None:
        self.loop.call_soon_threadsafe(self.reached.set)
        assert isinstance(self.release, threading.Event)
        assert self.release.wait(BOUND), "never released"


class ForgetHooks:
    """A plugin whose ``after_forget`` runs before the episode engine's (``tryfirst``): a
    forget of a memory it watches sets ``reached`` once the memory is deleted from the
    store, and, when told to hold, waits for ``release`` before the engine hears of it."""

    name = "race-forget-hooks"

    def __init__(self) -> None:
        self.watched: dict[str, tuple[Pause, bool]] = {}

    def watch(self, memory_id: str, hold: bool) -> Pause:
        pause = Pause()
        self.watched[memory_id] = (pause, hold)
        return pause

    @hookimpl(tryfirst=True)
    async def after_forget(self, memory: Memory) -> None:
        pause, hold = self.watched.pop(memory.id, (None, False))
        if pause is None:
            return
        pause.reached.set()
        if hold:
            assert isinstance(pause.release, asyncio.Event)
            await asyncio.wait_for(pause.release.wait(), BOUND)


class Gate:
    """Holds the store's ``method`` (``get``: the read of the memories an add or create checks
    while it holds the engine's detect lock; ``delete``: the deletion of an episode's summary
    while the episode deletion holds its locks, its row gone) in the calls it is armed for:
    the call is made, then it waits. Armed by context (``asyncio.to_thread`` carries it), so
    no other call is held."""

    def __init__(self, rt: Runtime, monkeypatch: pytest.MonkeyPatch, method: str) -> None:
        self.armed: contextvars.ContextVar[Pause | None] = contextvars.ContextVar(method)
        store = rt.service.store
        call = getattr(store, method)

        def gated(*args: Any) -> Any:
            result = call(*args)
            pause = self.armed.get(None)
            if pause is not None:
                pause.arrive_threaded()
            return result

        monkeypatch.setattr(store, method, gated)

    def hold(self, call: Callable[[], Awaitable[T]]) -> tuple[Pause, asyncio.Task[T]]:
        """Start ``call()`` as a task held at the gate; returns its pause and task."""
        pause = Pause(threaded=True)

        async def run() -> T:
            self.armed.set(pause)
            return await call()

        return pause, asyncio.create_task(run())


@pytest.fixture
def hooks() -> ForgetHooks:
    return ForgetHooks()


@pytest.fixture
async def rt(tmp_path: Path, hooks: ForgetHooks) -> AsyncIterator[Runtime]:
    runtime = await start_runtime(make_config(tmp_path), run_scheduler=False, plugins=[hooks])
    yield runtime
    await runtime.stop()


async def status(call: Awaitable[Any]) -> int:
    """The HTTP status the call answers with: 200, or a TribalError's (anything else raises)."""
    try:
        await call
    except TribalError as exc:
        assert exc.status in (404, 409), f"{exc.status}: {exc.message}"
        assert exc.message
        return exc.status
    return 200


async def remember(rt: Runtime, text: str) -> str:
    result = await rt.api.remember(f"{text} {uuid.uuid4().hex}", skip_dedup=True)
    return str(result["memory_id"])


async def settle(rt: Runtime) -> None:
    assert await rt.episodes.worker.drain(BOUND), "episode work did not settle"


async def assert_counts_are_real(rt: Runtime) -> None:
    """Every membership is of an existing memory, every count is its real membership, and
    every summary memory is the summary of an existing episode (no orphan)."""
    store = rt.episodes.store
    members = store.memberships.all_member_ids()
    existing = {m.id for m in await rt.service.get_many(members)}
    assert set(members) <= existing, "memberships of forgotten memories"
    rows = store.episodes.find(limit=10_000)
    for row in rows:
        assert row.memory_count == len(store.memberships.member_ids(row.id)) >= 1, row.id
        listed = await rt.api.episode_get(row.id)
        assert listed["episode"]["memory_count"] == len(listed["memory_ids"])
    summaries = await ServiceHost(rt.service).memories_of_type(SourceType.EPISODE_SUMMARY)
    named = {row.summary_memory_id for row in rows}
    assert {m.id for m in summaries} <= named, "summary memories of no episode"


async def actions(rt: Runtime, episode_id: str, memory_id: str) -> list[str]:
    """The episode's history actions about ``memory_id``, oldest first."""
    history = (await rt.api.episode_get(episode_id))["history"]
    return [h["action"] for h in history if h["details"].get("memory_id") == memory_id]


async def test_forget_races_episode_add_both_orders(rt: Runtime, hooks: ForgetHooks, monkeypatch):
    gate = Gate(rt, monkeypatch, "get")
    anchor = await remember(rt, "billing export anchor")
    episode = (await rt.api.episode_create("Billing export", [anchor]))["episode_id"]
    await rt.api.episode_close(episode)  # the detector adds nothing to it; a user still may

    # The add read the memory before forget deleted it, and commits after the delete, before
    # the engine hears of the forget: it succeeds, and forget's hook then takes the memory out.
    memory = await remember(rt, "billing export detail")
    await settle(rt)  # the detector has looked at the memory: only the two calls below run
    assert rt.episodes.store.memberships.episode_of(memory) != episode
    read, adding = gate.hold(lambda: status(rt.api.episode_add(episode, memory)))
    await read.wait_reached()
    deleted = hooks.watch(memory, hold=True)
    forgetting = asyncio.create_task(status(rt.api.forget(memory)))
    await deleted.wait_reached()
    read.release.set()
    assert await adding == 200
    assert memory in rt.episodes.store.memberships.member_ids(
        episode
    )  # for now: forget is not done
    deleted.release.set()
    assert await forgetting == 200
    assert memory not in rt.episodes.store.memberships.member_ids(episode)
    assert await actions(rt, episode, memory) == ["add_memory", "memory_forgotten"]

    # Forget deleted the memory before the add looked; the engine has not heard of it yet:
    # the add finds no memory (404) and writes nothing.
    memory = await remember(rt, "billing export detail")
    await settle(rt)
    assert rt.episodes.store.memberships.episode_of(memory) != episode
    deleted = hooks.watch(memory, hold=True)
    forgetting = asyncio.create_task(status(rt.api.forget(memory)))
    await deleted.wait_reached()
    assert await status(rt.api.episode_add(episode, memory)) == 404
    deleted.release.set()
    assert await forgetting == 200
    assert memory not in rt.episodes.store.memberships.member_ids(episode)
    assert await actions(rt, episode, memory) == []

    assert rt.episodes.store.memberships.member_ids(episode) == [
        anchor
    ]  # the anchor stayed through both
    await settle(rt)
    await assert_counts_are_real(rt)


async def test_forget_races_episode_create_both_orders(
    rt: Runtime, hooks: ForgetHooks, monkeypatch
):
    gate = Gate(rt, monkeypatch, "get")
    store = rt.episodes.store

    # The create read both memories before forget deleted the first, and commits after the
    # delete, before the engine hears of the forget: it succeeds, and forget's hook then
    # takes the first out; the second stays, in an episode with its summary.
    first = await remember(rt, "search reindex step")
    second = await remember(rt, "search reindex check")
    await settle(rt)
    read, creating = gate.hold(lambda: rt.api.episode_create("Search reindex", [first, second]))
    await read.wait_reached()
    deleted = hooks.watch(first, hold=True)
    forgetting = asyncio.create_task(status(rt.api.forget(first)))
    await deleted.wait_reached()
    read.release.set()
    episode = (await creating)["episode_id"]
    assert store.memberships.member_ids(episode) == [first, second]  # for now: forget is not done
    deleted.release.set()
    assert await forgetting == 200
    assert store.memberships.episode_of(first) is None
    assert store.memberships.member_ids(episode) == [second]
    assert await actions(rt, episode, first) == ["memory_forgotten"]

    # Forget deleted the first before the create looked: the create finds it missing (404)
    # and creates nothing, neither an episode nor its summary memory.
    first = await remember(rt, "search reindex step")
    second = await remember(rt, "search reindex check")
    await settle(rt)
    before = [row.id for row in store.episodes.find(limit=10_000)]
    deleted = hooks.watch(first, hold=True)
    forgetting = asyncio.create_task(status(rt.api.forget(first)))
    await deleted.wait_reached()
    assert await status(rt.api.episode_create("Search reindex", [first, second])) == 404
    deleted.release.set()
    assert await forgetting == 200
    assert store.memberships.episode_of(first) is None
    assert [row.id for row in store.episodes.find(limit=10_000)] == before

    await settle(rt)
    await assert_counts_are_real(rt)


async def test_episode_delete_races_episode_add_both_orders(rt: Runtime, monkeypatch):
    reads, deletes = Gate(rt, monkeypatch, "get"), Gate(rt, monkeypatch, "delete")
    store = rt.episodes.store

    # The add holds the locks (it is reading the memory) when the deletion asks for them:
    # the add succeeds, then the deletion deletes the episode; the memory stays, in none.
    anchor = await remember(rt, "cache warmup anchor")
    memory = await remember(rt, "cache warmup detail")
    episode = (await rt.api.episode_create("Cache warmup", [anchor]))["episode_id"]
    await rt.api.episode_close(episode)  # the detector adds nothing to it; a user still may
    await settle(rt)
    read, adding = reads.hold(lambda: status(rt.api.episode_add(episode, memory)))
    await read.wait_reached()
    deleting = asyncio.create_task(status(rt.api.episode_delete(episode)))
    read.release.set()
    assert await adding == 200
    assert await deleting == 200
    assert store.episodes.get(episode) is None and store.memberships.episode_of(memory) is None
    assert len(await rt.service.get_many([anchor, memory])) == 2  # memories stay

    # The deletion has deleted the episode's row and holds its locks (deleting its summary
    # memory) when the add comes: the add finds no episode (404) and writes nothing.
    anchor = await remember(rt, "cache warmup anchor")
    memory = await remember(rt, "cache warmup detail")
    episode = (await rt.api.episode_create("Cache warmup", [anchor]))["episode_id"]
    await rt.api.episode_close(episode)
    await settle(rt)
    before = store.memberships.episode_of(memory)
    held, deleting = deletes.hold(lambda: status(rt.api.episode_delete(episode)))
    await held.wait_reached()
    assert await status(rt.api.episode_add(episode, memory)) == 404
    held.release.set()
    assert await deleting == 200
    assert store.episodes.get(episode) is None and store.memberships.episode_of(memory) == before

    await settle(rt)
    await assert_counts_are_real(rt)


def inject_dangling(data: Path, episode_id: str) -> str:
    """A membership of a memory that does not exist, written straight into the episode DB."""
    ghost = str(uuid.uuid4())
    store = EpisodeStore(data / "episodes.sqlite3")
    try:
        with store.transaction() as db:
            store.add_member(db, episode_id, ghost, 0.0, 0.0)
    finally:
        store.close()
    return ghost


async def test_dangling_memberships_are_removed_at_start(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    rt = await start_runtime(config, run_scheduler=False)
    try:
        ids = [await remember(rt, "queue retry policy") for _ in range(2)]
        episode = (await rt.api.episode_create("Queue retries", ids))["episode_id"]
    finally:
        await rt.stop()
    ghost = inject_dangling(config.data_path, episode)
    rt = await start_runtime(config, run_scheduler=False)
    try:
        assert rt.episodes.store.memberships.episode_of(ghost) is None
        got = await rt.api.episode_get(episode)
        assert got["episode"]["memory_count"] == 2 and sorted(got["memory_ids"]) == sorted(ids)
        await assert_counts_are_real(rt)
    finally:
        await rt.stop()


async def test_dangling_memberships_are_removed_on_the_tick(rt: Runtime) -> None:
    ids = [await remember(rt, "nightly vacuum job") for _ in range(2)]
    episode = (await rt.api.episode_create("Nightly vacuum", ids))["episode_id"]
    ghost = str(uuid.uuid4())
    store = rt.episodes.store
    with store.transaction() as db:
        store.add_member(db, episode, ghost, 0.0, 0.0)
    assert (await rt.api.episode_get(episode))["episode"]["memory_count"] == 3
    await rt.episodes.engine.tick()
    assert store.memberships.episode_of(ghost) is None
    assert (await rt.api.episode_get(episode))["episode"]["memory_count"] == 2
