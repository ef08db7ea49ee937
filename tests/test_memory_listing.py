"""Query-less listing (``GET /v1/memories``), its cursor, and recall restricted to an episode:
the real store (both backends for ``newest``) and the real app."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from test_storage_contract import T0, memory, open_backend, unit_vectors

from tribalmemory.config import config_from_dict
from tribalmemory.errors import InvalidInput
from tribalmemory.runtime import start_runtime
from tribalmemory.service import listing
from tribalmemory.storage.base import MemoryFilter
from tribalmemory.timeutil import to_iso

# -- the cursor and the store -----------------------------------------------------------------


def test_cursor_round_trip_and_refusal() -> None:
    item = memory("x", created_at=T0 + timedelta(microseconds=7))
    assert listing.decode_cursor(listing.encode_cursor(item)) == (item.created_at, item.id)
    for bad in ("", "???", "bm90IGEgY3Vyc29y", "x" * 201):
        with pytest.raises(InvalidInput, match="cursor is not one this server gave"):
            listing.decode_cursor(bad)


def test_a_cursor_of_one_list_is_refused_by_the_other() -> None:
    item = memory("x", created_at=T0)
    sessions = listing.encode_key(listing.key(item), "sessions")
    assert listing.decode_cursor(sessions, "sessions") == listing.key(item)
    with pytest.raises(InvalidInput, match="one of the sessions list, not of the memories list"):
        listing.decode_cursor(sessions)
    with pytest.raises(InvalidInput, match="one of the memories list, not of the sessions list"):
        listing.decode_cursor(listing.encode_cursor(item), "sessions")


@pytest.mark.parametrize("backend", ["edge", "server"])
def test_newest_orders_by_time_and_filters(backend: str, tmp_path) -> None:
    store = open_backend(backend, tmp_path)
    try:
        items = [
            memory(f"m{i}", created_at=T0 + timedelta(minutes=i), tags=["odd"] if i % 2 else [])
            for i in range(10)
        ]
        store.upsert(items, unit_vectors(10))
        assert [m.content for m in store.newest(None, 3)] == ["m9", "m8", "m7"]
        odd = store.newest(MemoryFilter(tags_any=["odd"], before=T0 + timedelta(minutes=6)), 10)
        assert [m.content for m in odd] == ["m5", "m3", "m1"]
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["edge", "server"])
def test_pages_cover_everything_once_with_shared_instants(backend: str, tmp_path) -> None:
    store = open_backend(backend, tmp_path)
    try:
        # 40 memories on 4 instants: every page boundary falls inside a group of equal times
        items = [memory(f"m{i}", created_at=T0 + timedelta(seconds=i % 4)) for i in range(40)]
        store.upsert(items, unit_vectors(40))
        expected = listing.below(items, None)
        seen, cursor = [], None
        for _ in range(20):
            chosen, token = listing.page(store, MemoryFilter(), 7, cursor)
            seen += chosen
            if token is None:
                break
            cursor = listing.decode_cursor(token)
        assert [m.id for m in seen] == [m.id for m in expected]
    finally:
        store.close()


# -- through the API --------------------------------------------------------------------------


@pytest.fixture
async def rt(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = {"detector_strategy": "embedding", "summary_debounce_seconds": 0}
    config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": settings})
    runtime = await start_runtime(config, run_scheduler=False)
    yield runtime
    await runtime.stop()


async def test_paging_is_stable_while_memories_are_written(rt: Any) -> None:
    batch = [
        {"content": f"note {i} about topic {i * 7}", "created_at": to_iso(T0 + timedelta(hours=i))}
        for i in range(30)
    ]
    stored = await rt.api.remember_batch(batch)
    before = {r["memory_id"] for r in stored["results"]}
    seen: list[str] = []
    cursor = None
    written = 0
    while True:
        page, *_ = await asyncio.gather(
            rt.api.memories_list(limit=4, cursor=cursor),
            rt.api.remember(f"written meanwhile {written}", skip_dedup=True),
            rt.api.remember(
                f"backdated meanwhile {written}",
                created_at=to_iso(T0 + timedelta(hours=written * 3, minutes=30)),
                skip_dedup=True,
            ),
        )
        written += 1
        seen += [m["id"] for m in page["memories"]]
        times = [(m["created_at"], m["id"]) for m in page["memories"]]
        assert times == sorted(times, reverse=True)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen))  # nothing shown twice
    assert before <= set(seen)  # nothing that existed at the start skipped


async def test_filters_and_episode_restriction(rt: Any) -> None:
    ids = []
    for i, (text, tag) in enumerate(
        [
            ("Deploys to staging run through make deploy-staging", "deploy"),
            ("The billing tests need make test-billing", "billing"),
            ("Production deploys need two approvals", "deploy"),
        ]
    ):
        created = to_iso(T0 + timedelta(days=i))
        result = await rt.api.remember(text, tags=[tag], created_at=created)
        ids.append(result["memory_id"])
    deploys = await rt.api.memories_list(tag="deploy")
    assert [m["id"] for m in deploys["memories"]] == [ids[2], ids[0]]
    window = await rt.api.memories_list(since=to_iso(T0 + timedelta(days=1)), until="2025-03-03")
    assert [m["id"] for m in window["memories"]] == [ids[1]]
    typed = await rt.api.memories_list(source_type="correction")
    assert typed == {"memories": [], "count": 0, "next_cursor": None}
    listed = await rt.api.memories_list()
    assert {m["id"] for m in listed["memories"]} == set(ids)
    episode = await rt.api.episode_create("Deploys", [ids[0], ids[2]])
    members = await rt.api.memories_list(episode_id=episode["episode_id"])
    assert [m["id"] for m in members["memories"]] == [ids[2], ids[0]]
    assert all(m["episode_id"] == episode["episode_id"] for m in members["memories"])
    assert await rt.episodes.worker.drain(30)
    summaries = await rt.api.memories_list(source_type="episode_summary")
    assert [m["metadata"]["episode_id"] for m in summaries["memories"]] == [episode["episode_id"]]
    tagged = await rt.api.memories_list(tag="deploy")  # the summary has its members' tags
    assert [m["id"] for m in tagged["memories"]] == [ids[2], ids[0]]
    found = await rt.api.recall("make test-billing", episode_id=episode["episode_id"])
    assert {h["memory_id"] for h in found["results"]} <= {ids[0], ids[2]}
    everywhere = await rt.api.recall("make test-billing")
    assert everywhere["results"][0]["memory_id"] == ids[1]  # the restriction made the difference


def test_http_listing_and_its_errors(client: Any) -> None:
    for i in range(3):
        body = {"content": f"listing note {i}", "tags": ["l"], "skip_dedup": True}
        assert client.post("/v1/remember", json=body).status_code == 200
    first = client.get("/v1/memories?limit=2&tag=l")
    assert first.status_code == 200 and first.json()["count"] == 2
    rest = client.get(f"/v1/memories?limit=2&tag=l&cursor={first.json()['next_cursor']}")
    assert rest.json()["count"] == 1 and rest.json()["next_cursor"] is None
    cases = [
        ("limit=0", 400, "limit must be from 1 to 100"),
        ("cursor=garbage", 400, "cursor is not one this server gave"),
        ("source_type=nope", 400, "source_type"),
        ("since=soon", 400, "since"),
        ("tags=l", 400, "unknown query parameter 'tags'"),
        ("episode_id=ep-doesnotexist", 404, "no episode with id ep-doesnotexist"),
        ("episode_id=ep%20x", 400, "not an episode id"),
    ]
    for query, status, message in cases:
        response = client.get(f"/v1/memories?{query}")
        assert response.status_code == status, (query, response.text)
        assert message in response.json()["error"], query
    recall = client.post("/v1/recall", json={"query": "x", "episode_id": "ep-doesnotexist"})
    assert recall.status_code == 404
    recall = client.post("/v1/recall", json={"query": "x", "episode_id": 5})
    assert recall.status_code == 422 and "episode_id" in recall.json()["error"]


def test_episode_filter_without_the_engine(client_no_episodes: Any) -> None:
    assert client_no_episodes.get("/v1/memories").status_code == 200
    response = client_no_episodes.get("/v1/memories?episode_id=ep-1")
    assert response.status_code == 501
