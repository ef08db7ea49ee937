"""The episode engine through the real embedding model and store (no LLM: embedding path)."""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tribalmemory.config import config_from_dict
from tribalmemory.errors import InvalidInput, NotFound
from tribalmemory.runtime import Runtime, start_runtime
from tribalmemory.timeutil import parse_iso

AUTH = [
    "Support ticket: customers are logged out at random when the web app is open in several "
    "tabs; Sentry shows 401 'refresh token revoked' right after a refresh.",
    "Refresh tokens rotate on every use and a reused refresh token revokes the whole token "
    "family, which logs the user out everywhere.",
    "Two browser tabs call /auth/refresh at the same moment: the second one presents the "
    "already rotated refresh token and triggers the reuse detection logout.",
    "Fix for the multi-tab logout: accept the previous refresh token for a 10 second grace "
    "window after rotation.",
]
DB = [
    "Planning the migration of the main database from MySQL 8 to PostgreSQL 16 with pgloader.",
    "pgloader rehearsal of the MySQL to Postgres migration: 3 tables failed on zero dates.",
    "Postgres migration: rewrote the MySQL specific GROUP_CONCAT queries for PostgreSQL.",
    "MySQL to PostgreSQL cutover scheduled for Saturday; pgloader run takes 40 minutes.",
]


class Clock:
    def __init__(self, start: str = "2025-03-20T00:00:00Z") -> None:
        self.now = parse_iso(start).timestamp()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def make_runtime(tmp_path, clock, monkeypatch) -> AsyncIterator[Callable[..., Any]]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    started: list[Runtime] = []

    async def make(**episodes: Any) -> Runtime:
        settings = {"detector_strategy": "embedding", "summary_debounce_seconds": 0}
        settings.update(episodes)
        config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": settings})
        runtime = await start_runtime(config, clock=clock, run_scheduler=False)
        started.append(runtime)
        return runtime

    yield make
    for runtime in started:
        await runtime.stop()


async def remember(rt: Runtime, text: str, day: int, hour: int = 10, tags=None) -> dict:
    result = await rt.api.remember(
        text, tags=tags or [], created_at=f"2025-03-{day:02d}T{hour:02d}:00:00Z"
    )
    assert result["success"], result
    return result


async def settle(rt: Runtime) -> None:
    assert await rt.episodes.worker.drain(30), "episode work did not settle"


async def episode_of(rt: Runtime, memory_id: str) -> str | None:
    return (await rt.api.get_memory(memory_id))["episode_id"]


async def test_interleaved_threads_are_separated(make_runtime):
    rt = await make_runtime()
    ids: dict[str, list[str]] = {"auth": [], "db": []}
    for i in range(4):
        ids["auth"].append((await remember(rt, AUTH[i], 3 + i, 9, ["auth"]))["memory_id"])
        ids["db"].append((await remember(rt, DB[i], 3 + i, 14, ["db"]))["memory_id"])
    await settle(rt)
    auth_eps = {await episode_of(rt, m) for m in ids["auth"]}
    db_eps = {await episode_of(rt, m) for m in ids["db"]}
    assert len(auth_eps) == 1 and None not in auth_eps
    assert len(db_eps) == 1 and None not in db_eps
    assert auth_eps != db_eps
    listed = await rt.api.episodes_list()
    assert listed["count"] == 2
    assert sorted(e["memory_count"] for e in listed["episodes"]) == [4, 4]


async def test_first_memory_is_unassigned_until_a_second_one_matches(make_runtime):
    rt = await make_runtime()
    first = await remember(rt, AUTH[0], 3)
    assert first["episode_id"] is None and first["episode_status"] == "unassigned"
    assert (await rt.api.episodes_list())["count"] == 0
    second = await remember(rt, AUTH[2], 3, 11)
    assert second["episode_id"] is not None
    assert await episode_of(rt, first["memory_id"]) == second["episode_id"]


async def test_a_paused_thread_resumes_in_its_episode(make_runtime):
    rt = await make_runtime()
    a = [await remember(rt, AUTH[i], 3 + i) for i in range(2)]
    for day, text in ((6, DB[0]), (7, DB[1])):
        await remember(rt, text, day)
    resumed = await remember(rt, AUTH[3], 14)  # 10 days later, inside the 14-day window
    await settle(rt)
    assert resumed["episode_id"] == await episode_of(rt, a[0]["memory_id"])


async def test_idle_episode_is_closed_at_write_time_with_a_final_summary(make_runtime):
    rt = await make_runtime()
    a = [await remember(rt, AUTH[i], 1 + i) for i in range(2)]
    episode_id = await episode_of(rt, a[0]["memory_id"])
    late = await remember(rt, AUTH[2], 25)  # 23 days later: the episode was idle > 14 days
    await settle(rt)
    got = (await rt.api.episode_get(episode_id))["episode"]
    assert got["status"] == "closed" and got["closed_at"] is not None
    assert got["summary_status"] == "current" and got["summary"]
    assert late["episode_id"] != episode_id  # a closed episode is never joined automatically


async def test_scheduler_tick_closes_idle_and_archives_old(make_runtime, clock):
    rt = await make_runtime()
    a = [await remember(rt, AUTH[i], 1 + i) for i in range(2)]
    episode_id = await episode_of(rt, a[0]["memory_id"])
    # The clock is 2025-03-20, 18 days after the memories' time, but they were added just now
    # (an import): the tick leaves the episode to the memories' own time.
    await rt.episodes.engine.upkeep.tick()
    assert (await rt.api.episode_get(episode_id))["episode"]["status"] == "active"
    clock.now += 14 * 86400 + 1  # nothing added for the active window: the tick closes it
    await rt.episodes.engine.upkeep.tick()
    await settle(rt)
    assert (await rt.api.episode_get(episode_id))["episode"]["status"] == "closed"
    clock.now += 91 * 86400
    await rt.episodes.engine.upkeep.tick()
    assert (await rt.api.episode_get(episode_id))["episode"]["status"] == "archived"
    assert (await rt.api.episodes_list(status="archived"))["count"] == 1


async def test_active_cap_closes_the_least_recently_active(make_runtime):
    rt = await make_runtime(max_active_episodes=1)
    a = [await remember(rt, AUTH[i], 3, 9 + i) for i in range(2)]
    b = [await remember(rt, DB[i], 4, 9 + i) for i in range(2)]
    await settle(rt)
    first = await episode_of(rt, a[0]["memory_id"])
    second = await episode_of(rt, b[0]["memory_id"])
    assert (await rt.api.episode_get(first))["episode"]["status"] == "closed"
    assert (await rt.api.episode_get(second))["episode"]["status"] == "active"
    assert (await rt.api.episodes_list(status="active"))["count"] == 1


async def summary_text(rt: Runtime, episode_id: str) -> str:
    got = (await rt.api.episode_get(episode_id))["episode"]
    return (await rt.api.get_memory(got["summary_memory_id"]))["content"]


async def test_forget_takes_memory_out_and_summary_forgets_it(make_runtime):
    rt = await make_runtime()
    a = [await remember(rt, AUTH[i], 3 + i) for i in range(3)]
    await settle(rt)
    episode_id = await episode_of(rt, a[0]["memory_id"])
    assert "grace" not in await summary_text(rt, episode_id)
    assert "two browser tabs" in (await summary_text(rt, episode_id)).lower()
    await rt.api.forget(a[2]["memory_id"])
    assert "two browser tabs" not in (await summary_text(rt, episode_id)).lower()
    await settle(rt)
    got = await rt.api.episode_get(episode_id)
    assert got["episode"]["memory_count"] == 2
    assert a[2]["memory_id"] not in got["memory_ids"]
    assert "two browser tabs" not in (await summary_text(rt, episode_id)).lower()


async def test_remove_refreshes_summary_and_count(make_runtime):
    rt = await make_runtime()
    a = [await remember(rt, AUTH[i], 3 + i) for i in range(3)]
    await settle(rt)
    episode_id = await episode_of(rt, a[0]["memory_id"])
    await rt.api.episode_remove(episode_id, a[1]["memory_id"])
    await settle(rt)
    got = await rt.api.episode_get(episode_id)
    assert got["episode"]["memory_count"] == 2 == len(got["memory_ids"])
    assert "rotate on every use" not in await summary_text(rt, episode_id)
    assert await episode_of(rt, a[1]["memory_id"]) is None
    with pytest.raises(NotFound):
        await rt.api.episode_remove(episode_id, a[1]["memory_id"])


async def test_summaries_surface_in_recall_with_the_union_of_tags(make_runtime):
    rt = await make_runtime()
    await remember(rt, AUTH[0], 3, tags=["auth", "bug"])
    await remember(rt, AUTH[2], 4, tags=["auth", "sentry"])
    await settle(rt)
    (episode,) = (await rt.api.episodes_list())["episodes"]
    # beside its members a summary is shown only when it adds (test_recall_ranking.py)
    found = await rt.api.recall(
        "logged out with several tabs refresh token", limit=10, source_types=["episode_summary"]
    )
    summaries = [r for r in found["results"] if r["memory"]["source_type"] == "EPISODE_SUMMARY"]
    assert len(summaries) == 1
    memory = summaries[0]["memory"]
    assert set(memory["tags"]) == {"auth", "bug", "sentry", f"episode:{episode['id']}"}
    assert memory["episode_id"] == episode["id"]
    assert memory["metadata"]["summary_kind"] == "extractive"
    only = await rt.api.recall("refresh token", source_types=["episode_summary"])
    assert [r["memory_id"] for r in only["results"]] == [summaries[0]["memory_id"]]
    tagged = await rt.api.recall(
        "refresh token", tags=["sentry"], limit=10, source_types=["episode_summary"]
    )
    assert summaries[0]["memory_id"] in [r["memory_id"] for r in tagged["results"]]


async def test_manual_operations(make_runtime):
    rt = await make_runtime()
    ids = [(await remember(rt, text, 3 + i))["memory_id"] for i, text in enumerate(DB[:2])]
    other = (await remember(rt, "The office coffee machine is broken again.", 9))["memory_id"]
    with pytest.raises(NotFound):
        await rt.api.episode_create("x", [ids[0], "00000000-0000-4000-8000-000000000000"])
    with pytest.raises(InvalidInput):
        await rt.api.episode_create("   ", ids)
    created = await rt.api.episode_create("My migration", [ids[0], other])
    assert created["memory_count"] == 2
    episode_id = created["episode_id"]
    twice = await rt.api.episode_add(episode_id, other)
    assert twice == {"success": True, "added": False, "moved_from": None}  # a no-op, said
    got = await rt.api.episode_get(episode_id)
    assert got["episode"]["memory_count"] == 2 and got["episode"]["title"] == "My migration"
    summary_id = got["episode"]["summary_memory_id"]
    with pytest.raises(InvalidInput):
        await rt.api.forget(summary_id)  # a summary is removed with its episode, not alone
    await rt.api.episode_close(episode_id)
    await settle(rt)
    got = (await rt.api.episode_get(episode_id))["episode"]
    assert got["status"] == "closed" and got["title"] == "My migration"
    await rt.api.episode_delete(episode_id)
    with pytest.raises(NotFound):
        await rt.api.episode_get(episode_id)
    with pytest.raises(NotFound):
        await rt.api.get_memory(summary_id)
    assert (await rt.api.get_memory(other))["id"] == other  # memories are kept


async def test_manual_add_moves_a_memory_between_episodes(make_runtime):
    rt = await make_runtime()
    ids = [(await remember(rt, DB[i], 3 + i))["memory_id"] for i in range(3)]
    await settle(rt)
    source = await episode_of(rt, ids[0])
    target = (await rt.api.episode_create("Cutover", [ids[2]]))["episode_id"]
    assert await episode_of(rt, ids[2]) == target
    moved = await rt.api.episode_add(target, ids[1])
    assert moved == {"success": True, "added": True, "moved_from": source}
    await settle(rt)
    assert await episode_of(rt, ids[1]) == target
    assert (await rt.api.episode_get(source))["memory_ids"] == [ids[0]]
    assert (await rt.api.episode_get(target))["memory_ids"] == [ids[1], ids[2]]


async def test_state_survives_restart(make_runtime):
    rt = await make_runtime()
    a = [await remember(rt, AUTH[i], 3 + i) for i in range(2)]
    await settle(rt)
    episode_id = await episode_of(rt, a[0]["memory_id"])
    await rt.stop()
    again = await make_runtime()
    got = await again.api.episode_get(episode_id)
    assert got["memory_ids"] == [a[0]["memory_id"], a[1]["memory_id"]]
    joined = await remember(again, AUTH[2], 6)
    assert joined["episode_id"] == episode_id


async def test_features_of_many_members_are_built_off_the_event_loop(make_runtime, monkeypatch):
    """Tokenising a large episode's members takes milliseconds: on a thread, the event loop
    gets the GIL back every millisecond instead of waiting for the whole."""
    rt = await make_runtime()
    texts = [
        *AUTH,
        *DB,
        "The iOS build now signs with the new distribution certificate.",
        "Release notes for 4.2 list the offline mode and the faster sync.",
    ]
    ids = [(await remember(rt, text, 3, 8 + i))["memory_id"] for i, text in enumerate(texts)]
    state = rt.episodes.engine.state
    threads: list[threading.Thread] = []
    build = state.matcher.memory

    def noted(memory, vector):
        threads.append(threading.current_thread())
        return build(memory, vector)

    monkeypatch.setattr(state.matcher, "memory", noted)
    state.kept_features.drop(ids)  # kept since they arrived: built again here
    features = await state.features(ids)
    assert [f.id for f in features] == ids and len(ids) > 8
    assert threading.main_thread() not in threads
    threads.clear()
    state.kept_features.drop(ids[:2])
    await state.features(ids)  # a few to build: inline, no thread hop
    assert threads == [threading.main_thread()] * 2


POTTERY = [  # one thread of a chat, told in "Name: text" turns (written for this test)
    "Caroline: I signed up for a pottery class, working the clay on the wheel is so calming.",
    "Melanie: A pottery class! Did you throw a bowl on the wheel yet?",
    "Caroline: Yes, a clay bowl with a blue glaze, it goes into the kiln on Tuesday.",
    "Melanie: Send me a photo of the bowl when it comes out of the kiln!",
]
CHAT = [  # the same people on other days, about other things
    "Caroline: The adoption agency called back about the home visit.",
    "Melanie: We went camping at the lake with the kids last weekend.",
    "Caroline: My support group met again, it was a good evening.",
    "Melanie: The kids want to go camping again in August.",
]


async def test_chat_thread_is_titled_by_its_terms_not_its_speakers(make_runtime):
    """Issue 39: every title was a speaker's first name ("Caroline", cut at "Caroline: "), and
    the extractive summary dated every line."""
    rt = await make_runtime()
    for i, text in enumerate(CHAT):
        await remember(rt, text, 1 + 2 * i)
    turns = [await remember(rt, text, 12, 10 + i) for i, text in enumerate(POTTERY)]
    await settle(rt)
    episode_id = await episode_of(rt, turns[0]["memory_id"])
    assert episode_id is not None
    for turn in turns[1:]:  # the thread is one episode whatever the detector made of it
        if await episode_of(rt, turn["memory_id"]) != episode_id:
            await rt.api.episode_add(episode_id, turn["memory_id"])
    await settle(rt)
    got = (await rt.api.episode_get(episode_id))["episode"]
    title = got["title"].lower()
    assert not {"caroline", "melanie"} & set(title.replace(",", " ").split()), title
    assert {"pottery", "kiln", "clay", "bowl"} & set(title.replace(",", " ").split()), title
    summary = (await summary_text(rt, episode_id)).splitlines()
    assert summary[0] == f"Episode: {got['title']}"
    assert sum(1 for line in summary if re.search(r"\d{4}-\d{2}-\d{2}", line)) == 1, summary
    assert any(line.startswith("About: ") and "kiln" in line for line in summary), summary
