"""Import: validate every line first, report what would change, then store what is new.

Importing is idempotent by id: a memory or an episode whose id is stored already is left as
it is, so importing the same file twice adds nothing, and an import cut short (a kill, a full
disk) is completed by importing the file again. The new memories are stored in memory time
order, a page at a time: one durable write per page, then the write-time hooks of each memory
in that order, so the episode engine places them as it would have placed them remembered one
at a time. The file's episodes are recreated as exported (the episode engine's
``restore_episode``): their memories are stored without the write-time hooks (no detection,
no LLM call) and joined to them. The exported vectors are used when the file was written with
the same embedding model, else the memories are embedded (a page per model call, while the
page before is stored). Last, the links a user added by hand are restored between the nodes
now stored (a link whose node is neither in the file nor here is skipped, and counted).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..api import TribalAPI
from ..errors import InvalidInput, Unavailable
from ..service.importing import ImportItem
from ..timeutil import utc_now
from . import records

MAX_ERRORS = 20  # reported at once; the rest are counted
Stopping = Callable[[], bool]
"""Whether the daemon is shutting down: an import asked to stop ends between two pages."""


def never() -> bool:
    return False


def stopped(done: str) -> Unavailable:
    """The answer to an import that a shutdown ended (503): what was done, how to finish."""
    return Unavailable(
        f"the server is shutting down: {done}. Import the same file again once it runs to "
        "import the rest (what is stored already is skipped)"
    )


NODE_MISSING = "node not in the import"
"""Why a user's link is skipped: its cause or effect is in neither the file nor this data
folder (in the link's project)."""
EPISODES_OFF = "episodes disabled"
"""Why every link is skipped: links join episodes and memories, kept by the episode engine."""

CHECK_PAGE = 256  # memory ids checked against the store at once
PAGE = 256  # memories stored at once, in one durable write (and embedded in one call)


@dataclass
class Report:
    """What an import finds in a file and (after :func:`apply`) what it did."""

    memories: int = 0
    episodes: int = 0
    new: int = 0
    existing: int = 0
    repeated: int = 0  # lines of a memory earlier in the file (a plain line written twice)
    stored: int = 0
    vectors_used: bool = False
    dry_run: bool = True
    episodes_new: int = 0
    episodes_existing: int = 0
    episodes_created: int = 0
    causes: int = 0
    causes_created: int = 0
    causes_existing: int = 0
    causes_skipped: dict[str, int] = field(default_factory=dict)  # by reason
    placed: set[str] = field(default_factory=set)  # memories of the episodes to recreate
    chain_ids: set[str] = field(default_factory=set)  # the file's episode ids
    index: Index = field(default_factory=lambda: Index())  # where apply() reads from

    def to_json(self) -> dict[str, Any]:
        return {
            "memories": self.memories,
            "episodes": self.episodes,
            "new": self.new,
            "existing": self.existing,
            "repeated": self.repeated,
            "stored": self.stored,
            "vectors_used": self.vectors_used,
            "dry_run": self.dry_run,
            "episodes_new": self.episodes_new,
            "episodes_existing": self.episodes_existing,
            "episodes_created": self.episodes_created,
            "causes": self.causes,
            "causes_created": self.causes_created,
            "causes_existing": self.causes_existing,
            "causes_skipped": dict(self.causes_skipped),
        }


def parse_all(
    lines: Iterable[bytes], max_chars: int, default_instance: str = "default"
) -> Iterator[
    records.Header | records.ImportedMemory | records.ImportedEpisode | records.ImportedCause
]:
    """Every record of a file, checked; raises InvalidInput listing up to 20 bad lines.

    An export starts with its header; a file whose first line has no ``type`` holds plain
    lines (:func:`records.parse_plain`, a plain header yielded first), with no end line.
    ``default_instance``: the source_instance of plain lines that name none."""
    errors: list[str] = []
    head: records.Header | None = None
    counts = {"memory": 0, "episode": 0, "cause": 0}
    ended: dict[str, Any] | None = None
    member_line: dict[str, int] = {}  # a memory is in at most one episode
    id_line: dict[tuple[str, str], int] = {}  # an export holds each memory, episode, cause once

    def once(kind: str, record_id: str, number: int) -> None:
        first_line = id_line.setdefault((kind, record_id), number)
        if first_line != number:
            raise InvalidInput(
                f"line {number}: {kind} {record_id} is on line {first_line} already (an export "
                f"holds each {kind} once)"
            )

    for number, raw in enumerate(lines, start=1):
        try:
            if head is not None and head.plain:
                data = records.parse_object(raw, number)
                if data is not None:
                    counts["memory"] += 1
                    yield records.parse_plain(data, number, head, max_chars)
                continue
            if head is None:
                first = records.parse_object(raw, number)
                if first is not None and records.is_plain(first):
                    head = records.plain_header(utc_now(), default_instance)
                    yield head
                    counts["memory"] += 1
                    yield records.parse_plain(first, number, head, max_chars)
                    continue
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
                    memory = records.parse_memory(data, number, head, max_chars)
                    once("memory", memory.memory.id, number)
                    yield memory
                elif data["type"] == "cause":
                    cause = records.parse_cause(data, number)
                    once("cause", cause.id, number)
                    yield cause
                else:
                    episode = records.parse_episode(data, number)
                    once("episode", episode.id, number)
                    for memory_id in episode.memory_ids:
                        first_line = member_line.setdefault(memory_id, number)
                        if first_line != number:
                            raise InvalidInput(
                                f"line {number}: memory {memory_id} is in the episode of "
                                f"line {first_line} already (a memory is in one episode)"
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
        raise InvalidInput(
            "the file is empty; expected an export header on line 1, or plain lines of "
            '{"content": ..., "created_at": ...}'
        )
    if not head.plain:  # plain lines have no end line
        errors.extend(_end_problems(ended, counts))
    if errors:
        shown = errors[:MAX_ERRORS]
        more = f" (and {len(errors) - len(shown)} more)" if len(errors) > len(shown) else ""
        noun = "problem" if len(errors) == 1 else "problems"
        raise InvalidInput(f"{len(errors)} {noun} in the file; nothing was imported{more}", shown)


def _end_problems(ended: dict[str, Any] | None, counts: dict[str, int]) -> list[str]:
    """What is wrong with an export's end line, given what the file holds."""
    if ended is None:
        return ["the file ends without its end line: the export was cut short"]
    if (ended.get("memories"), ended.get("episodes")) != (counts["memory"], counts["episode"]):
        return [
            f"the end line counts {ended.get('memories')} memories and {ended.get('episodes')} "
            f"episodes, the file holds {counts['memory']} and {counts['episode']}"
        ]
    if ended.get("causes", 0) != counts["cause"]:  # an export from before cause lines: none
        return [
            f"the end line counts {ended.get('causes')} causal links, the file holds "
            f"{counts['cause']}"
        ]
    return []


class OffsetLines:
    """The lines of a file; ``offset`` is where the line given last starts. :func:`parse_all`
    yields a record as soon as it has read its line, so a consumer reads a record's offset
    here when it gets the record."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def __iter__(self) -> Iterator[bytes]:
        position = 0
        with self.path.open("rb") as handle:
            for raw in handle:
                self.offset = position
                yield raw
                position += len(raw)


@dataclass
class Index:
    """Where the new memories, the episodes and the causal links are in a file: the memories'
    times and line offsets (compact arrays: 16 bytes a memory), the episode and cause lines'
    offsets in file order."""

    header: records.Header | None = None
    times: array = field(default_factory=lambda: array("d"))
    offsets: array = field(default_factory=lambda: array("q"))
    episodes: list[int] = field(default_factory=list)
    causes: list[int] = field(default_factory=list)

    def time_order(self) -> list[int]:
        """The memory offsets by memory time, equal times in file order."""
        times = np.frombuffer(self.times, dtype=np.float64)
        offsets = np.frombuffer(self.offsets, dtype=np.int64)
        return offsets[np.lexsort((offsets, times))].tolist()


async def plan(api: TribalAPI, path: Path, stopping: Stopping = never) -> Report:
    """Validate the whole file and count what an import would add (stores nothing); raise
    Unavailable when ``stopping()`` says the daemon shuts down meanwhile."""
    report = Report()
    service = api.service
    pending: list[tuple[str, float, int]] = []  # new memory candidates: id, time, offset
    seen: set[str] = set()
    episodes: dict[str, list[str]] = {}  # a page of episode ids and their members
    index = report.index

    async def flush() -> None:
        found = {m.id for m in await service.get_many([p[0] for p in pending])}
        report.existing += len(found)
        report.new += len(pending) - len(found)
        for memory_id, at, offset in pending:
            if memory_id not in found:
                index.times.append(at)
                index.offsets.append(offset)
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

    lines = OffsetLines(path)
    config = service.config
    for item in parse_all(
        lines, config.server.max_content_chars, config.memory.default_source_instance
    ):
        if isinstance(item, records.Header):
            index.header = item
            report.vectors_used = item.vectors and (item.model, item.dim) == (
                service.embedder.model_name,
                service.embedder.dim,
            )
        elif isinstance(item, records.ImportedMemory):
            report.memories += 1
            if item.memory.id in seen:
                report.repeated += 1  # twice in the file: stored once
                continue
            seen.add(item.memory.id)
            pending.append((item.memory.id, item.memory.created_at.timestamp(), lines.offset))
            if len(pending) >= CHECK_PAGE:
                if stopping():
                    raise stopped("nothing was imported")
                await flush()
        elif isinstance(item, records.ImportedCause):
            report.causes += 1
            index.causes.append(lines.offset)
        else:
            report.episodes += 1
            report.chain_ids.add(item.id)
            index.episodes.append(lines.offset)
            episodes[item.id] = item.memory_ids
            if len(episodes) >= CHECK_PAGE:
                flush_episodes()
    if pending:
        await flush()
    flush_episodes()
    return report


def read_at(handle: BinaryIO, offset: int) -> dict[str, Any]:
    """The JSON object of the line at ``offset`` (validated by :func:`plan` already)."""
    handle.seek(offset)
    data = records.parse_object(handle.readline(), 0)
    if data is None:  # the file changed since it was validated
        raise InvalidInput("the file changed while it was imported; nothing more was imported")
    return data


async def apply(
    api: TribalAPI,
    path: Path,
    progress: Callable[[int], None] | None = None,
    planned: Report | None = None,
    stopping: Stopping = never,
) -> Report:
    """Validate (:func:`plan`, unless ``planned`` is its report of this file), then store
    every memory whose id is not stored yet and recreate every episode whose id is not
    stored yet.

    The new memories are stored in memory time order (equal times in file order), whatever
    the file's order, a page of :data:`PAGE` at a time (:meth:`MemoryService.import_page`:
    one durable write per page; the episode engine decides each memory in that order, as if
    they had been remembered one at a time). Memories without a usable vector are embedded,
    one model run per page, while the page before is stored. Then the file's episodes are
    recreated, in file order.

    When ``stopping()`` turns true (the daemon shuts down), the page being stored is
    finished and Unavailable (503) says how many were imported."""
    report = planned if planned is not None else await plan(api, path, stopping)
    report.dry_run = False
    service = api.service
    max_chars = service.config.server.max_content_chars
    placed = report.placed if api.episodes is not None else set()
    index = report.index
    head = index.header
    assert head is not None  # plan raised otherwise
    order = index.time_order()
    if progress is not None and report.memories > len(order):
        progress(report.memories - len(order))  # stored already, or twice in the file

    async def prepare(items: list[records.ImportedMemory]) -> list[ImportItem]:
        missing = [i for i in items if not (report.vectors_used and i.vector is not None)]
        vectors: dict[int, np.ndarray] = {}
        if missing:
            embedded = await service.embed_bulk([i.memory.content for i in missing])
            vectors = {id(i): v for i, v in zip(missing, embedded, strict=True)}
        out = []
        for item in items:
            given = vectors.get(id(item))
            vector = given if given is not None else np.asarray(item.vector, dtype=np.float32)
            out.append(ImportItem(item.memory, vector, item.memory.id in placed))
        return out

    with path.open("rb") as handle:

        def load(start: int) -> list[records.ImportedMemory]:
            return [
                records.parse_memory(read_at(handle, offset), 0, head, max_chars)
                for offset in order[start : start + PAGE]
            ]

        async def page(number: int) -> list[ImportItem]:
            return await prepare(load(number * PAGE))

        def check(stored: int) -> None:
            if stopping():
                raise stopped(f"{stored} of {len(order)} new memories were imported")

        pages = -(-len(order) // PAGE)
        report.stored += await service.import_pages(pages, page, check, progress)
        if api.episodes is not None:
            for number, offset in enumerate(index.episodes):
                if stopping():
                    raise stopped(
                        f"all {report.stored} new memories and {number} of "
                        f"{len(index.episodes)} episodes were imported"
                    )
                episode = records.parse_episode(read_at(handle, offset), 0)
                done = await api.episodes.restore_episode(episode.as_record(), report.chain_ids)
                report.episodes_created += int(done["created"])
            await _restore_causes(api, handle, report, stopping)
        elif index.causes:
            report.causes_skipped[EPISODES_OFF] = len(index.causes)
    return report


async def _restore_causes(
    api: TribalAPI, handle: BinaryIO, report: Report, stopping: Stopping
) -> None:
    """The file's user links, a page at a time, once its memories and episodes are stored."""
    assert api.episodes is not None
    offsets = report.index.causes
    for start in range(0, len(offsets), PAGE):
        if stopping():
            raise stopped(
                f"all {report.stored} new memories and the episodes were imported, {start} of "
                f"{len(offsets)} causal links"
            )
        page = [records.parse_cause(read_at(handle, o), 0) for o in offsets[start : start + PAGE]]
        counted = await api.episodes.restore_causes([c.as_record() for c in page])
        report.causes_created += counted["created"]
        report.causes_existing += counted["existing"]
        if counted["skipped"]:
            report.causes_skipped[NODE_MISSING] = (
                report.causes_skipped.get(NODE_MISSING, 0) + counted["skipped"]
            )
