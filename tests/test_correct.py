"""Corrections demote the old fact (issue 16, point 4): a corrected memory is marked superseded,
left out of recall unless ``include_superseded``, and out of episode summaries (extractive at
once, and the LLM's input), through the real service, episode engine and fake LLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakellm import FakeLLM
from helpers_http import unique
from helpers_runtime import settle
from starlette.testclient import TestClient

from tribalmemory.config import config_from_dict
from tribalmemory.models import Memory, SourceType, new_memory_id
from tribalmemory.runtime import Runtime, start_runtime
from tribalmemory.timeutil import utc_now

STAGING = [
    "Staging Postgres listens on port 5433 because 5432 is taken by the legacy cluster.",
    "The staging database is reset every night from the anonymised production dump.",
    "Connect to staging Postgres through the bastion host with the ops VPN profile.",
]
CORRECTION = "Staging Postgres listens on port 6543 since the legacy cluster was retired."


def ids(found: dict[str, Any]) -> list[str]:
    return [hit["memory_id"] for hit in found["results"]]


async def staging_episode(rt: Runtime) -> tuple[list[str], str]:
    stored = [(await rt.api.remember(text))["memory_id"] for text in STAGING]
    created = await rt.api.episode_create("Staging database", stored)
    await settle(rt)
    return stored, created["episode_id"]


async def summary_texts(rt: Runtime, episode_id: str) -> list[str]:
    """The episode's summary, LLM summary base, metadata and its summary memory's text."""
    row = rt.episodes.store.episodes.get(episode_id)
    assert row is not None
    found = await rt.service.get_many([row.summary_memory_id] if row.summary_memory_id else [])
    return [row.title, row.summary, row.llm_summary, str(row.metadata)] + [m.content for m in found]


async def test_a_corrected_memory_leaves_recall_and_summaries(engine_runtime: Any) -> None:
    rt = await engine_runtime()
    stored, episode_id = await staging_episode(rt)
    assert any("5433" in text for text in await summary_texts(rt, episode_id))
    old = stored[0]

    result = await rt.api.correct(old, CORRECTION)
    assert result["success"], result
    new = result["memory_id"]
    # Extractive at once, before any job ran: the summary no longer holds the old fact.
    assert not any("5433" in text for text in await summary_texts(rt, episode_id))

    found = await rt.api.recall("staging postgres port", limit=10)
    assert new in ids(found) and old not in ids(found)
    shown = await rt.api.recall("staging postgres port", limit=10, include_superseded=True)
    assert old in ids(shown) and new in ids(shown)
    hit = next(h for h in shown["results"] if h["memory_id"] == old)
    assert hit["memory"]["superseded_by"] == new
    assert (await rt.api.get_memory(new))["supersedes"] == old

    await settle(rt)  # the queued full regeneration
    assert not any("5433" in text for text in await summary_texts(rt, episode_id))


async def test_a_correction_joins_the_episode_of_the_memory_it_corrects(
    engine_runtime: Any,
) -> None:
    """A correction that says too little for the detector to place it (a terse one, and one
    in other words) still continues its memory's thread; once that episode is closed, the
    next correction is decided as any memory."""
    rt = await engine_runtime()
    stored, episode_id = await staging_episode(rt)
    for old, text in (
        (stored[0], "Wrong: 6543."),
        (stored[1], "Refresh cadence changed to weekly, Sundays at 03:00 UTC."),
    ):
        corrected = await rt.api.correct(old, text)
        assert corrected["episode_id"] == episode_id, text
        assert rt.episodes.store.memberships.episode_of(corrected["memory_id"]) == episode_id
    await rt.api.episode_close(episode_id)
    late = await rt.api.correct(stored[2], "Wrong: 6543.")
    assert late["episode_id"] != episode_id


async def test_the_llm_is_not_shown_the_corrected_memory(
    engine_runtime: Any, fake_llm_env: FakeLLM
) -> None:
    rt = await engine_runtime(llm_update_every=1)
    stored, episode_id = await staging_episode(rt)
    row = rt.episodes.store.episodes.get(episode_id)
    assert row is not None and row.summary_kind == "llm" and "5433" in row.summary
    before = len(fake_llm_env.requests)

    await rt.api.correct(stored[0], CORRECTION)
    await settle(rt)
    later = fake_llm_env.requests[before:]
    summaries = [r for r in later if r.purpose in ("regenerate", "update", "final")]
    assert summaries, [r.purpose for r in later]
    for request in summaries:
        # the old port as the memory writes it: the prompt also holds random memory ids, and
        # "5433" alone was once found inside one of them
        assert stored[0] not in request.text and "port 5433" not in request.text
    assert not any("5433" in text for text in await summary_texts(rt, episode_id))


def test_a_memory_already_corrected_is_not_corrected_again(client: TestClient) -> None:
    """A second correction of one memory left both corrections standing as current; it is a
    409 naming the correction to correct instead, and nothing is stored."""
    old = client.post("/v1/remember", json={"content": unique("The API port is 8080")}).json()
    first = client.post(
        "/v1/correct", json={"memory_id": old["memory_id"], "content": unique("API port 9090")}
    ).json()
    before = client.get("/v1/stats").json()["total_memories"]
    again = client.post(
        "/v1/correct", json={"memory_id": old["memory_id"], "content": unique("API port 7070")}
    )
    assert again.status_code == 409
    assert again.json()["error"] == (
        f"memory {old['memory_id']} is already corrected by {first['memory_id']}; "
        "correct that memory instead"
    )
    assert client.get("/v1/stats").json()["total_memories"] == before
    chained = client.post(
        "/v1/correct", json={"memory_id": first["memory_id"], "content": unique("API port 7070")}
    )
    assert chained.status_code == 200 and chained.json()["success"]


def test_rest_recall_include_superseded(client: TestClient) -> None:
    old = client.post("/v1/remember", json={"content": unique("The API port is 8080")}).json()
    fixed = client.post(
        "/v1/correct", json={"memory_id": old["memory_id"], "content": unique("API port 9090")}
    ).json()
    query = {"query": "API port", "limit": 10}
    default = client.post("/v1/recall", json=query).json()
    assert [h["memory_id"] for h in default["results"]] == [fixed["memory_id"]]
    both = client.post("/v1/recall", json=query | {"include_superseded": True}).json()
    assert {h["memory_id"] for h in both["results"]} == {old["memory_id"], fixed["memory_id"]}
    bad = client.post("/v1/recall", json=query | {"include_superseded": "yes"})
    assert bad.status_code == 422 and "include_superseded" in bad.json()["error"]


async def test_restating_a_corrected_fact_stores_it_again(tmp_path: Path) -> None:
    """The superseded memory is hidden from recall, so it cannot make its restatement a
    duplicate: the fact would be dropped and invisible."""
    config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": {"enabled": False}})
    rt = await start_runtime(config)
    try:
        old = (await rt.api.remember("The build image uses Python 3.11"))["memory_id"]
        await rt.api.correct(old, "The build image uses Python 3.12 since the upgrade")
        again = await rt.api.remember("The build image uses Python 3.11")
        assert again["success"] and again["duplicate_of"] is None
        found = await rt.api.recall("which Python does the build image use", limit=10)
        assert again["memory_id"] in ids(found) and old not in ids(found)
    finally:
        await rt.stop()


async def test_a_correction_stored_before_a_crash_is_finished_at_start(tmp_path: Path) -> None:
    """A crash after the correction was stored but before the old memory was marked: the
    next start marks it."""
    config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": {"enabled": False}})
    rt = await start_runtime(config)
    try:
        old = (await rt.api.remember("Deploys need 2 approvals"))["memory_id"]
        text = "Deploys need 1 approval since May"
        now = utc_now()
        correction = Memory(
            new_memory_id(), text, SourceType.CORRECTION, "x", [], None, now, now, supersedes=old
        )
        rt.service.store.upsert([correction], await rt.service.embed([text]))  # then "crash"
        assert (await rt.service.get(old)).superseded_by is None
    finally:
        await rt.stop()
    rt = await start_runtime(config)
    try:
        assert (await rt.service.get(old)).superseded_by == correction.id
        found = await rt.api.recall("how many approvals do deploys need", limit=10)
        assert ids(found) == [correction.id]
    finally:
        await rt.stop()
