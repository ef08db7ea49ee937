"""Import: validate every line first, report what would change, then store what is new.

Importing is idempotent by id: a memory or an episode whose id is stored already is left as
it is, so importing the same file twice adds nothing. The file's episodes are recreated as
exported (the episode engine's ``restore_episode``): their memories are stored without the
write-time hooks (no detection, no LLM call) and joined to them. Memories of no episode in
the file go through the write-time hooks, so the engine places them as it places any memory.
The exported vectors are used when the file was written with the same embedding model, else
the memories are embedded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..api import TribalAPI
from ..errors import InvalidInput
from . import records

MAX_ERRORS = 20  # reported at once; the rest are counted
CHECK_PAGE = 256
EMBED_PAGE = 64  # memories embedded in one model run


@dataclass
class Report:
    """What an import finds in a file and (after :func:`apply`) what it did."""

    memories: int = 0
    episodes: int = 0
    new: int = 0
    existing: int = 0
    stored: int = 0
    vectors_used: bool = False
    dry_run: bool = True
    episodes_new: int = 0
    episodes_existing: int = 0
    episodes_created: int = 0
    placed: set[str] = field(default_factory=set)  # memories of the episodes to recreate
    chain_ids: set[str] = field(default_factory=set)  # the file's episode ids

    def to_json(self) -> dict[str, Any]:
        return {
            "memories": self.memories,
            "episodes": self.episodes,
            "new": self.new,
            "existing": self.existing,
            "stored": self.stored,
            "vectors_used": self.vectors_used,
            "dry_run": self.dry_run,
            "episodes_new": self.episodes_new,
            "episodes_existing": self.episodes_existing,
            "episodes_created": self.episodes_created,
        }


def read_lines(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        yield from handle


def parse_all(
    lines: Iterable[bytes], max_chars: int
) -> Iterator[records.Header | records.ImportedMemory | records.ImportedEpisode]:
    """Every record of a file, checked; raises InvalidInput listing up to 20 bad lines."""
    errors: list[str] = []
    head: records.Header | None = None
    counts = {"memory": 0, "episode": 0}
    ended: dict[str, Any] | None = None
    member_line: dict[str, int] = {}  # a memory is in at most one episode
    for number, raw in enumerate(lines, start=1):
        try:
            data = records.parse_line(raw, number)
            if data is None:
                continue
            if ended is not None:
                raise InvalidInput(f"line {number}: a line after the end line")
            if head is None:
                head = records.parse_header(data, number)
                yield head
            elif data["type"] in counts:
                counts[data["type"]] += 1
                if data["type"] == "memory":
                    yield records.parse_memory(data, number, head, max_chars)
                else:
                    episode = records.parse_episode(data, number)
                    for memory_id in episode.memory_ids:
                        first = member_line.setdefault(memory_id, number)
                        if first != number:
                            raise InvalidInput(
                                f"line {number}: memory {memory_id} is in the episode of "
                                f"line {first} already (a memory is in one episode)"
                            )
                    yield episode
            elif data["type"] == "end":
                ended = data
            else:
                raise InvalidInput(f"line {number}: a second header")
        except InvalidInput as exc:
            if head is None:
                raise
            errors.append(exc.message)
    if head is None:
        raise InvalidInput("the file is empty; expected an export header on line 1")
    if ended is None:
        errors.append("the file ends without its end line: the export was cut short")
    elif (ended.get("memories"), ended.get("episodes")) != (counts["memory"], counts["episode"]):
        errors.append(
            f"the end line counts {ended.get('memories')} memories and {ended.get('episodes')} "
            f"episodes, the file holds {counts['memory']} and {counts['episode']}"
        )
    if errors:
        shown = errors[:MAX_ERRORS]
        more = f" (and {len(errors) - len(shown)} more)" if len(errors) > len(shown) else ""
        noun = "problem" if len(errors) == 1 else "problems"
        raise InvalidInput(f"{len(errors)} {noun} in the file; nothing was imported{more}", shown)


async def plan(api: TribalAPI, path: Path) -> Report:
    """Validate the whole file and count what an import would add (stores nothing)."""
    report = Report()
    service = api.service
    pending: list[str] = []
    seen: set[str] = set()
    episodes: dict[str, list[str]] = {}  # a page of episode ids and their members

    async def flush() -> None:
        found = {m.id for m in await service.get_many(pending)}
        report.existing += len(found)
        report.new += len(pending) - len(found)
        pending.clear()

    def flush_episodes() -> None:
        if api.episodes is not None:
            known = api.episodes.existing_episodes(list(episodes))
            report.episodes_existing += len(known)
            report.episodes_new += len(episodes) - len(known)
            for episode_id, members in episodes.items():
                if episode_id not in known:  # else its new memories go through detection
                    report.placed.update(members)
        episodes.clear()

    for item in parse_all(read_lines(path), service.config.server.max_content_chars):
        if isinstance(item, records.Header):
            report.vectors_used = item.vectors and (item.model, item.dim) == (
                service.embedder.model_name,
                service.embedder.dim,
            )
        elif isinstance(item, records.ImportedMemory):
            report.memories += 1
            if item.memory.id in seen:
                report.existing += 1  # twice in the file: stored once
                continue
            seen.add(item.memory.id)
            pending.append(item.memory.id)
            if len(pending) >= CHECK_PAGE:
                await flush()
        else:
            report.episodes += 1
            report.chain_ids.add(item.id)
            episodes[item.id] = item.memory_ids
            if len(episodes) >= CHECK_PAGE:
                flush_episodes()
    if pending:
        await flush()
    flush_episodes()
    return report


async def apply(
    api: TribalAPI, path: Path, progress: Callable[[int], None] | None = None
) -> Report:
    """Validate (:func:`plan`), then store every memory whose id is not stored yet and
    recreate every episode whose id is not stored yet.

    Memories without a usable vector are embedded a page at a time (one model run per page)."""
    report = await plan(api, path)
    report.dry_run = False
    service = api.service
    max_chars = service.config.server.max_content_chars
    placed = report.placed if api.episodes is not None else set()
    page: list[records.ImportedMemory] = []

    async def store_page() -> None:
        known = {m.id for m in await service.get_many([i.memory.id for i in page])}
        todo = [i for i in page if i.memory.id not in known]
        missing = [i for i in todo if not (report.vectors_used and i.vector is not None)]
        embedded = await service.embed([i.memory.content for i in missing]) if missing else []
        vectors = {id(i): v for i, v in zip(missing, embedded, strict=True)}
        for item in todo:
            given = vectors.get(id(item))
            vector = given if given is not None else np.asarray(item.vector, dtype=np.float32)
            if await service.import_memory(item.memory, vector, item.memory.id in placed):
                report.stored += 1
        if progress is not None:
            progress(len(page))
        page.clear()

    for item in parse_all(read_lines(path), max_chars):
        if isinstance(item, records.ImportedMemory):
            page.append(item)
            if len(page) >= EMBED_PAGE:
                await store_page()
        elif isinstance(item, records.ImportedEpisode) and api.episodes is not None:
            if page:
                await store_page()
            done = await api.episodes.restore_episode(item.as_record(), report.chain_ids)
            report.episodes_created += int(done["created"])
    if page:
        await store_page()
    return report
