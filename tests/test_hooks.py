"""The plugin contract: hook specifications checked at registration, the error policy of each
hook (service/hookspecs.py), and the narrow host plugins receive -- on the real service, store
and episode plugin."""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest
from helpers_http import BASE_URL, build_runtime, unique
from starlette.testclient import TestClient

from tribalmemory.config import config_from_dict
from tribalmemory.errors import InvalidInput, TribalError, Unavailable
from tribalmemory.interfaces.http import create_app
from tribalmemory.models import Memory, SourceType
from tribalmemory.runtime import Runtime, start_runtime
from tribalmemory.service import HookRegistry, PluginError, ServiceHost, hookimpl
from tribalmemory.timeutil import utc_now


class Broken:
    """A plugin whose hooks named in ``failing`` raise ``error``; it records what it sees."""

    name = "broken"

    def __init__(self, *failing: str, error: Exception | None = None) -> None:
        self.failing = set(failing)
        self.error = error or RuntimeError("boom")
        self.seen: list[tuple[str, str]] = []

    def _run(self, hook: str, memory_id: str = "") -> None:
        self.seen.append((hook, memory_id))
        if hook in self.failing:
            raise type(self.error)(*self.error.args)  # a fresh one: no traceback piles up

    @hookimpl
    async def start(self) -> None:
        self._run("start")

    @hookimpl
    async def stop(self) -> None:
        self._run("stop")

    @hookimpl
    async def before_remember(self, memory: Memory) -> None:
        self._run("before_remember", memory.id)

    @hookimpl
    async def store_failed(self, memory: Memory) -> None:
        self._run("store_failed", memory.id)

    @hookimpl
    async def after_remember(self, memory: Memory) -> dict[str, Any]:
        self._run("after_remember", memory.id)
        return {"broken_saw": memory.id}

    @hookimpl
    def check_forget(self, memory: Memory) -> None:
        self._run("check_forget", memory.id)

    @hookimpl
    async def after_forget(self, memory: Memory) -> None:
        self._run("after_forget", memory.id)

    @hookimpl
    async def after_correct(self, new: Memory) -> None:
        self._run("after_correct", new.id)

    @hookimpl
    def annotate(self, memories: list[Memory]) -> dict[str, dict[str, Any]]:
        self._run("annotate")
        return {m.id: {"broken_field": True} for m in memories}

    @hookimpl
    def health(self) -> dict[str, Any]:
        self._run("health")
        return {"broken": {"ok": True}}

    @hookimpl
    def stats(self) -> dict[str, Any]:
        self._run("stats")
        return {"broken": {"count": 1}}


@pytest.fixture
async def make_runtime(tmp_path: Path, monkeypatch) -> AsyncIterator[Callable[..., Any]]:
    """start_runtime on one data folder, with the episode plugin (embedding path) and extras."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    started: list[Runtime] = []

    async def make(*plugins: object, episodes: bool = True) -> Runtime:
        settings = {"enabled": episodes, "detector_strategy": "embedding"}
        config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": settings})
        runtime = await start_runtime(config, plugins=plugins, run_scheduler=False)
        started.append(runtime)
        return runtime

    yield make
    for runtime in started:
        await runtime.stop()


# -- registration -------------------------------------------------------------------------------


def test_a_misspelled_hook_is_refused_at_registration() -> None:
    class Misspelled:
        name = "typo"

        @hookimpl
        async def after_remeber(self, memory: Memory) -> None: ...

    registry = HookRegistry()
    with pytest.raises(PluginError, match="'typo' implements unknown hook 'after_remeber'"):
        registry.register(Misspelled())
    assert registry.plugins == []


class SyncBefore:
    name = "sync-before"

    @hookimpl
    def before_remember(self, memory: Memory) -> None: ...


class AsyncAnnotate:
    name = "async-annotate"

    @hookimpl
    async def annotate(self, memories: list[Memory]) -> dict[str, dict[str, Any]]:
        return {}


class UnknownArgument:
    name = "unknown-argument"

    @hookimpl
    async def after_remember(self, memory: Memory, episode: str) -> None: ...


class Wrapper:
    name = "wrapper"

    @hookimpl(wrapper=True)
    def health(self) -> Iterator[dict[str, Any]]:
        return (yield)


@pytest.mark.parametrize(
    "plugin, message",
    [
        (SyncBefore(), "hook 'before_remember' must be an async function"),
        (AsyncAnnotate(), "hook 'annotate' must be a plain (sync) function"),
        (UnknownArgument(), "'episode'"),
        (Wrapper(), "hook 'health' cannot be a wrapper"),
    ],
    ids=lambda value: getattr(value, "name", ""),
)
def test_a_hook_that_does_not_fit_its_spec_is_refused(plugin: object, message: str) -> None:
    registry = HookRegistry()
    with pytest.raises(PluginError, match=re.escape(message)):
        registry.register(plugin)
    assert registry.plugins == []


async def test_start_up_fails_naming_the_misspelled_hook_and_releases_the_store(
    make_runtime,
) -> None:
    class Misspelled:
        name = "typo"

        @hookimpl
        def helth(self) -> dict[str, Any]:
            return {}

    with pytest.raises(PluginError, match="unknown hook 'helth'"):
        await make_runtime(Misspelled())
    runtime = await make_runtime()  # the failed start closed the store: it opens again
    assert runtime.api.health()["status"] == "ok"


async def test_a_failing_start_fails_start_up_and_stops_the_started_plugins(
    make_runtime,
) -> None:
    first, second = Broken(), Broken("start")
    second.name = "broken-too"
    with pytest.raises(RuntimeError, match="boom"):
        await make_runtime(second, first, episodes=False)  # pluggy calls `first` first
    assert first.seen == [("start", ""), ("stop", "")]
    assert second.seen == [("start", "")]


# -- error policy -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error, expected",
    [(RuntimeError("disk full"), Unavailable), (InvalidInput("not now"), InvalidInput)],
    ids=["unexpected", "tribal-error"],
)
async def test_a_failing_before_remember_fails_the_write_and_stores_nothing(
    make_runtime, error: Exception, expected: type[TribalError]
) -> None:
    plugin = Broken("before_remember", error=error)
    runtime = await make_runtime(plugin)  # registered first: called after the episode plugin
    with pytest.raises(expected) as caught:
        await runtime.api.remember(unique("never stored"))
    if expected is Unavailable:
        assert "plugin 'broken' failed in before_remember" in caught.value.message
        assert "disk full" not in caught.value.message  # the reason is in the log only
    assert (await runtime.api.stats())["total_memories"] == 0
    (memory_id,) = [m for hook, m in plugin.seen if hook == "before_remember"]
    assert ("store_failed", memory_id) in plugin.seen
    assert ("after_remember", memory_id) not in plugin.seen
    # The episode plugin recorded its intent first; store_failed dropped it: nothing pending.
    assert runtime.api.health()["episodes"]["queue_depth"] == 0
    assert await runtime.episodes.worker.drain(10)
    assert (await runtime.api.episodes_list())["count"] == 0


async def import_items(runtime: Runtime, count: int) -> list[Any]:
    from tribalmemory.service.importing import ImportItem

    texts = [unique(f"imported memory {k}") for k in range(count)]
    vectors = await runtime.service.embed(texts)
    now = utc_now()
    return [
        ImportItem(
            Memory(str(uuid.uuid4()), t, SourceType.AUTO_CAPTURE, "x", [], None, now, now), v
        )
        for t, v in zip(texts, vectors, strict=True)
    ]


async def test_a_page_import_runs_before_remember_for_each_memory_without_a_batch_hook(
    make_runtime,
) -> None:
    """A plugin without ``before_remember_batch`` sees ``before_remember`` for each memory of
    a page, then ``after_remember`` for each in the page's order; the episode plugin (which
    has the batch hook) decides each."""
    plugin = Broken()
    runtime = await make_runtime(plugin)
    page = await import_items(runtime, 3)
    ids = [item.memory.id for item in page]
    assert await runtime.service.import_page(page) == ids
    assert plugin.seen[1:] == [("before_remember", m) for m in ids] + [
        ("after_remember", m) for m in ids
    ]
    states = runtime.episodes.store.detections.states(ids)
    assert set(states) == set(ids) and "pending" not in states.values()
    assert await runtime.service.import_page(page) == []  # stored already: nothing again


class BrokenBatch:
    name = "broken-batch"

    def __init__(self) -> None:
        self.failed: list[str] = []

    @hookimpl
    async def before_remember_batch(self, memories: list[Memory]) -> None:
        raise RuntimeError("no room")

    @hookimpl
    async def store_failed(self, memory: Memory) -> None:
        self.failed.append(memory.id)


async def test_a_failing_before_remember_batch_stores_no_memory_of_the_page(
    make_runtime,
) -> None:
    """The episode plugin records its intent for the page first; the other plugin's batch hook
    fails: nothing is stored, every plugin hears ``store_failed`` for each memory, and the
    episode plugin's intent is dropped (nothing pending)."""
    plugin = BrokenBatch()
    runtime = await make_runtime(plugin)  # registered first: called after the episode plugin
    page = await import_items(runtime, 3)
    with pytest.raises(Unavailable, match="plugin 'broken-batch' failed in before_remember_batch"):
        await runtime.service.import_page(page)
    assert (await runtime.api.stats())["total_memories"] == 0
    assert plugin.failed == [item.memory.id for item in page]
    assert runtime.api.health()["episodes"]["queue_depth"] == 0
    assert runtime.episodes.store.detections.states(plugin.failed) == {}


async def test_failing_after_hooks_are_logged_and_never_lose_the_memory(
    make_runtime, caplog: pytest.LogCaptureFixture
) -> None:
    plugin = Broken("after_remember", "after_correct", "after_forget")
    runtime = await make_runtime(plugin)
    with caplog.at_level(logging.WARNING, logger="tribalmemory.hooks"):
        stored = await runtime.api.remember(unique("kept despite the plugin"))
        assert stored["success"] and "broken_saw" not in stored
        assert stored["episode_status"] == "unassigned"  # the episode plugin's part is kept
        corrected = await runtime.api.correct(stored["memory_id"], unique("corrected"))
        assert corrected["success"]
        await runtime.api.forget(corrected["memory_id"])
    got = await runtime.api.get_memory(stored["memory_id"])
    assert got["content"].startswith("kept despite the plugin")
    by_type = (await runtime.api.stats())["by_source_type"]
    assert by_type["USER_EXPLICIT"] == 1 and by_type["CORRECTION"] == 0  # forgotten
    for hook in ("after_remember", "after_correct", "after_forget"):
        assert f"plugin broken failed in {hook}: RuntimeError: boom" in caplog.text


async def test_a_failing_check_forget_refuses_the_forget(make_runtime) -> None:
    runtime = await make_runtime(Broken("check_forget"), episodes=False)
    stored = await runtime.api.remember(unique("still here"))
    with pytest.raises(Unavailable, match="plugin 'broken' failed in check_forget"):
        await runtime.api.forget(stored["memory_id"])
    assert (await runtime.api.get_memory(stored["memory_id"]))["id"] == stored["memory_id"]


@pytest.fixture
def broken_client(tmp_path: Path, embedder: Any) -> Iterator[tuple[TestClient, Broken]]:
    """The real app over a service whose only plugin fails in annotate, health and stats."""
    config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": {"enabled": False}})
    runtime = build_runtime(config, embedder)
    plugin = Broken("annotate", "health", "stats")
    runtime.service.hooks.register(plugin)
    asyncio.run(runtime.service.hooks.start(ServiceHost(runtime.service)))
    with TestClient(create_app(config, runtime), base_url=BASE_URL) as client:
        yield client, plugin
    runtime.service.store.close()


def test_a_failing_annotate_does_not_turn_recall_into_a_500(
    broken_client: tuple[TestClient, Broken], caplog: pytest.LogCaptureFixture
) -> None:
    client, plugin = broken_client
    content = unique("billing tests need make test-billing")
    memory_id = client.post("/v1/remember", json={"content": content}).json()["memory_id"]
    with caplog.at_level(logging.WARNING, logger="tribalmemory.hooks"):
        recall = client.post("/v1/recall", json={"query": "billing tests"})
        got = client.get(f"/v1/memory/{memory_id}")
    assert recall.status_code == 200 and got.status_code == 200
    (hit,) = recall.json()["results"]
    assert hit["memory"]["id"] == memory_id and "broken_field" not in hit["memory"]
    assert got.json()["content"] == content and "broken_field" not in got.json()
    assert ("annotate", "") in plugin.seen
    assert "plugin broken failed in annotate: RuntimeError: boom" in caplog.text


def test_failing_health_and_stats_appear_as_an_error_field(
    broken_client: tuple[TestClient, Broken], caplog: pytest.LogCaptureFixture
) -> None:
    client, plugin = broken_client
    with caplog.at_level(logging.WARNING, logger="tribalmemory.hooks"):
        health = [client.get("/v1/health") for _ in range(3)]
        stats = client.get("/v1/stats")
    assert [h.status_code for h in health] == [200] * 3 and stats.status_code == 200
    assert health[-1].json()["broken"] == {"error": "RuntimeError: boom"}
    assert health[-1].json()["status"] == "ok" and health[-1].json()["store"]["backend"]
    assert stats.json()["broken"] == {"error": "RuntimeError: boom"}
    assert stats.json()["total_memories"] == 0
    # Logged once per reason, not on every poll; logged again once it failed, worked, failed.
    assert caplog.text.count("plugin broken failed in health") == 1
    plugin.failing.discard("health")
    assert client.get("/v1/health").json()["broken"] == {"ok": True}
    plugin.failing.add("health")
    client.get("/v1/health")
    assert caplog.text.count("plugin broken failed in health") == 2


def test_every_hook_has_an_error_policy() -> None:
    from tribalmemory.service import hookspecs

    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    declared = {name for name in vars(manager.hook) if not name.startswith("_")}
    assert declared == set(hookspecs.ON_ERROR)


# -- the host -----------------------------------------------------------------------------------


def summary(memory_id: str, text: str) -> Memory:
    now = utc_now()
    return Memory(
        id=memory_id,
        content=text,
        source_type=SourceType.EPISODE_SUMMARY,
        source_instance="tribalmemory",
        tags=[],
        context=None,
        created_at=now,
        updated_at=now,
        metadata={"episode_id": "ep-0000000000000001"},
    )


async def test_the_host_writes_and_deletes_only_plugin_owned_memories(make_runtime) -> None:
    runtime = await make_runtime(episodes=False)
    host = ServiceHost(runtime.service)
    user = await runtime.api.remember("Deploys go through the staging cluster first.")
    user_memory = (await host.get_memories([user["memory_id"]]))[0]
    with pytest.raises(PermissionError, match=user["memory_id"]):
        await host.delete_owned([user["memory_id"]])
    beside = summary("00000000-0000-4000-8000-000000000002", "Episode: refused with its neighbour")
    with pytest.raises(PermissionError):
        await host.write_owned([beside, user_memory])
    assert await host.get_memories([user["memory_id"]]) == [user_memory]

    owned = summary("00000000-0000-4000-8000-000000000001", "Episode: staging deploys")
    assert await host.get_memories([beside.id]) == []  # nothing of a refused write is stored
    await host.write_owned([owned])
    assert [m.id for m in await host.memories_of_type(SourceType.EPISODE_SUMMARY)] == [owned.id]
    with pytest.raises(ValueError, match="source types"):
        await host.search("staging", [], limit=5, min_relevance=0.0, project="default")
    hits = await host.search(
        "staging deploys",
        [SourceType.EPISODE_SUMMARY],
        limit=5,
        min_relevance=0.0,
        project="default",
    )
    assert [h.memory.id for h in hits] == [owned.id]  # the user memory is not searched
    await host.delete_owned([owned.id])
    assert await host.memories_of_type(SourceType.EPISODE_SUMMARY) == []
