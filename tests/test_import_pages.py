"""The import's page path on the real engine (store, embedder, episode engine): memories are
stored a page at a time in memory time order, the engine places them as it places memories
stored one at a time in that order, and an import killed (SIGKILL) in the middle of a page is
completed by importing the file again, without duplicates."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_http import EPISODES, write_config
from helpers_runtime import killed_at_sixth_decision, run_killed

from tribalmemory.config import load_config
from tribalmemory.models import SourceType
from tribalmemory.portability import importer, records
from tribalmemory.runtime import Runtime, start_runtime
from tribalmemory.storage.base import MemoryFilter
from tribalmemory.timeutil import to_iso

START = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
TOKENS = [
    "Refresh token rotation bug: two tabs refresh at once and the family is revoked",
    "Refresh token rotation: the grace window for the old token is too short",
    "Refresh token rotation fix: allow the previous refresh token for 30 seconds",
    "Refresh token rotation fix deployed; no more revoked token families in the logs",
    "Refresh token rotation: added a test with two tabs refreshing at the same moment",
    "Refresh token rotation closed: the grace window is documented for the mobile team",
]
MIGRATION = [
    "Postgres migration 0042 holds a lock on the orders table for ten minutes",
    "Postgres migration 0042: the lock comes from adding a column with a default",
    "Postgres migration 0042 rewritten to add the column first and backfill in batches",
    "Postgres migration 0042 backfill finished; the orders table was never locked",
    "Postgres migration 0042: the batched backfill pattern goes into the migration guide",
]
OTHER = [
    "The office coffee machine is descaled on Fridays",
    "Quarterly planning moved to the second week of April",
    "The design team switched the icon set to a rounded style",
]


def stream() -> list[tuple[str, datetime]]:
    """The two threads interleaved an hour apart with the unrelated ones, then, a month later
    (after the 14-day active window: the first episodes close), the token thread again.
    In time order, so order matters: read out of order, the month-old thread is still open."""
    first = [*TOKENS[:3], *MIGRATION, *OTHER]
    order = [0, 3, 1, 4, 8, 2, 5, 6, 9, 7, 10]  # tokens, migration and others interleaved
    out = [(first[i], START + timedelta(hours=hour)) for hour, i in enumerate(order)]
    later = START + timedelta(days=30)
    out += [(text, later + timedelta(hours=hour)) for hour, text in enumerate(TOKENS[3:])]
    return out


async def open_runtime(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    monkeypatch.setenv("TRIBAL_MEMORY_HOME", str(folder))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = load_config(write_config(folder, episodes=EPISODES))
    return await start_runtime(config, run_scheduler=False)


async def write_file(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """An export file with vectors of :func:`stream`, its lines in id
    order (as an export in the store's order), not in time order. Returns the memory lines
    in time order."""
    runtime = await open_runtime(path.parent / "writer", monkeypatch)
    try:
        texts = [text for text, _ in stream()]
        vectors = (await runtime.service.embed(texts)).tolist()
        model, dim = runtime.service.embedder.model_name, runtime.service.embedder.dim
    finally:
        await runtime.stop()
    lines = []
    for (text, when), vector in zip(stream(), vectors, strict=True):
        at = to_iso(when)
        lines.append(
            {
                "type": "memory",
                "id": str(uuid.uuid4()),
                "content": text,
                "source_type": "AUTO_CAPTURE",
                "source_instance": "test",
                "tags": [],
                "context": None,
                "created_at": at,
                "updated_at": at,
                "metadata": {},
                "vector": vector,
            }
        )
    in_file = sorted(lines, key=lambda line: line["id"])
    assert in_file != lines  # the file is not in time order: the import must sort it
    with path.open("w", encoding="utf-8") as handle:
        handle.write(records.dumps(records.header(model, dim, to_iso(START), None, True)))
        handle.writelines(records.dumps(line) for line in in_file)
        handle.write(records.dumps(records.end(len(lines), 0)))
    return lines


def placement(runtime: Runtime, ids: list[str]) -> tuple[set[frozenset[str]], dict[str, str]]:
    """The episodes as sets of member ids, and each memory's detection state."""
    store = runtime.episodes.store
    episodes = {frozenset(store.memberships.member_ids(e)) for e in store.episodes.all_ids()}
    states = store.detections.states(ids)
    return {e for e in episodes if e}, states


async def test_pages_in_time_order_place_memories_as_one_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of 4 (the threads cross pages) from a file in id order give the same episodes
    and detection states as storing each memory alone in time order."""
    source = tmp_path / "export.jsonl"
    lines = await write_file(source, monkeypatch)
    ids = [line["id"] for line in lines]
    monkeypatch.setattr(importer, "PAGE", 4)

    paged = await open_runtime(tmp_path / "paged", monkeypatch)
    try:
        report = await importer.apply(paged.api, source)
        assert report.stored == len(lines)
        assert await paged.episodes.worker.drain(60)
        by_pages = placement(paged, ids)
    finally:
        await paged.stop()

    single = await open_runtime(tmp_path / "single", monkeypatch)
    try:
        embedder = single.service.embedder
        head = records.Header(embedder.model_name, embedder.dim, True)
        for number, line in enumerate(lines, start=2):  # time order, one memory per call
            item = records.parse_memory(line, number, head, 10_000)
            assert await single.service.import_memory(item.memory, item.vector)
        assert await single.episodes.worker.drain(60)
        one_by_one = placement(single, ids)
    finally:
        await single.stop()

    episodes, states = by_pages
    assert len([e for e in episodes if len(e) >= 3]) >= 2  # both threads became episodes
    assert set(states) == set(ids) and "pending" not in states.values()
    assert by_pages == one_by_one


KILLER = killed_at_sixth_decision(
    "tribalmemory.portability.importer", "importer.apply(runtime.api, Path(sys.argv[2]))"
)


async def test_an_import_killed_in_a_page_is_completed_by_importing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL after the second page of 4 is durably stored and one of its memories decided:
    the 8 stored memories survive, the 3 left pending are decided when the engine starts
    again, and importing the file again stores the rest once; nothing is stored twice and
    no memory is in two episodes."""
    source = tmp_path / "export.jsonl"
    lines = await write_file(source, monkeypatch)
    ids = [line["id"] for line in lines]
    folder = tmp_path / "target"
    config = write_config(folder, episodes=EPISODES)
    run_killed(KILLER, config, source, folder)

    runtime = await open_runtime(folder, monkeypatch)
    try:
        stored = {m.id for m in await runtime.service.get_many(ids)}
        assert stored == set(ids[:8])  # two pages, in time order
        report = await importer.apply(runtime.api, source)
        assert (report.existing, report.stored) == (8, len(ids) - 8)
        assert await runtime.episodes.worker.drain(60)
        imported = MemoryFilter(source_types=[SourceType.AUTO_CAPTURE])
        assert runtime.service.store.count(imported) == len(ids)  # each once
        states = runtime.episodes.store.detections.states(ids)
        assert set(states) == set(ids) and "pending" not in states.values()
        members = runtime.episodes.store.memberships.all_member_ids()
        assert len(members) == len(set(members))  # no memory in two episodes
        again = await importer.apply(runtime.api, source)
        assert (again.existing, again.stored) == (len(ids), 0)
    finally:
        await runtime.stop()


def test_the_time_order_is_by_time_then_file_position() -> None:
    index = importer.Index()
    for at, offset in [(5.0, 100), (1.0, 300), (5.0, 50), (3.0, 10)]:
        index.times.append(at)
        index.offsets.append(offset)
    assert index.time_order() == [300, 10, 50, 100]


def test_a_record_is_read_back_at_its_line_offset(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    rows = [{"type": "header"}, {"type": "memory", "id": "a"}, {"type": "end"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    lines = importer.OffsetLines(path)
    offsets = []
    for _ in lines:
        offsets.append(lines.offset)
    with path.open("rb") as handle:
        assert [importer.read_at(handle, o) for o in offsets] == rows


async def test_memories_remembered_during_an_import_keep_every_invariant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three memories remembered while the first pages of a file are imported (the writes
    take turns on the write lock, the decisions on the detect lock): all are stored once and
    decided, and no memory is in two episodes."""
    source = tmp_path / "export.jsonl"
    lines = await write_file(source, monkeypatch)
    monkeypatch.setattr(importer, "PAGE", 4)
    runtime = await open_runtime(tmp_path / "target", monkeypatch)
    try:
        original = runtime.service.import_page
        writers: list[asyncio.Future[dict[str, Any]]] = []

        async def import_page(page: list[Any]) -> list[str]:
            """Each of the first three pages starts a remember() that runs while it is
            stored and decided."""
            if len(writers) < 3:
                text = f"Release train {len(writers)}: the iOS build is signed"
                writers.append(asyncio.ensure_future(runtime.api.remember(text)))
            return await original(page)

        monkeypatch.setattr(runtime.service, "import_page", import_page)
        report = await importer.apply(runtime.api, source)
        results = await asyncio.gather(*writers)
        assert all(r["success"] for r in results), results
        remembered = [r["memory_id"] for r in results]
        assert report.stored == len(lines)
        assert await runtime.episodes.worker.drain(60)
        ids = [line["id"] for line in lines] + remembered
        assert len(await runtime.service.get_many(ids)) == len(ids)
        states = runtime.episodes.store.detections.states(ids)
        assert set(states) == set(ids) and "pending" not in states.values()
        members = runtime.episodes.store.memberships.all_member_ids()
        assert len(members) == len(set(members))
    finally:
        await runtime.stop()


async def assert_request_vectors(runtime: Runtime, texts: list[str]) -> None:
    """Each stored memory of ``texts`` has the vector the request model gives its text."""
    memories = list(runtime.service.store.scroll())
    stored = await runtime.service.vectors([m.id for m in memories])
    by_text = {m.content: stored[m.id] for m in memories}
    expected = await runtime.service.embed(texts)
    for text, vector in zip(texts, expected, strict=True):
        # the same model and weights on one thread instead of two, in other runs: only the
        # order of float32 sums differs, far below 1e-4 of cosine
        assert float(np.dot(by_text[text], vector)) > 1 - 1e-4


async def test_an_import_embeds_its_pages_with_the_single_threaded_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memories imported without vectors are embedded by the single-threaded copy of the
    model (the background embedder's, at normal priority), which gives the vectors the
    request model gives. Episodes off: no summary loads that copy, only the import."""
    folder = tmp_path / "plain"
    monkeypatch.setenv("TRIBAL_MEMORY_HOME", str(folder))
    config = load_config(write_config(folder, episodes={"enabled": False}))
    source = tmp_path / "plain.jsonl"
    texts = [text for text, _ in stream()]
    with source.open("w", encoding="utf-8") as handle:
        for text, when in stream():
            handle.write(json.dumps({"content": text, "created_at": to_iso(when)}) + "\n")
    runtime = await start_runtime(config)
    try:
        background = runtime.service.background
        assert background is not None and background.status()["model"] == "not loaded"
        report = await importer.apply(runtime.api, source)
        assert (report.stored, report.vectors_used) == (len(texts), False)
        assert background.status()["model"] == "loaded"
        assert background.status()["calls"] == 0  # not through the low-priority thread
        await assert_request_vectors(runtime, texts)
    finally:
        await runtime.stop()


async def test_an_import_page_is_embedded_in_one_part_per_cpu_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of an import is split into one part per CPU (each of at least 64 texts), the
    parts embedded at once; every memory still gets its own text's vector."""
    from tribalmemory.service import state

    folder = tmp_path / "parts"
    monkeypatch.setenv("TRIBAL_MEMORY_HOME", str(folder))
    monkeypatch.setattr(state, "cpu_count", lambda: 2)  # whatever this machine has
    config = load_config(write_config(folder, episodes={"enabled": False}))
    texts = [
        f"Note {i}: the {['billing', 'search', 'deploy'][i % 3]} job {i * 7} ran"
        for i in range(300)
    ]
    source = tmp_path / "parts.jsonl"
    with source.open("w", encoding="utf-8") as handle:
        for i, text in enumerate(texts):
            when = START + timedelta(minutes=i)
            handle.write(json.dumps({"content": text, "created_at": to_iso(when)}) + "\n")
    runtime = await start_runtime(config)
    try:
        assert runtime.service.background is not None
        model = runtime.service.background.model()
        calls: list[int] = []
        embed = model.embed
        monkeypatch.setattr(model, "embed", lambda batch: calls.append(len(batch)) or embed(batch))
        report = await importer.apply(runtime.api, source)
        assert report.stored == len(texts)
        # pages of 256 and 44: the first in two parts of 128, the second (< 2 x 64) whole
        assert sorted(calls) == [44, 128, 128]
        await assert_request_vectors(runtime, texts)
    finally:
        await runtime.stop()
