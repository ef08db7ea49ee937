"""Embedded backend: one Qdrant Edge shard (``qdrant_edge``) in a local folder.

Layout of the store folder::

    store.json   model name, dimension and the active shard (the commit record), and the
                 shard's state: open or closed, memories and segment folders (see below)
    lock         held (flock) by the process that has the store open
    shard-<n>/   the Qdrant Edge shard: WAL, segments, payload indexes

Opening never deletes what it cannot account for. A damaged store.json, one naming a missing
shard, a shard that fails to load, a segment folder that store.json lists but that is gone, or
(after a clean close) another number of memories than at the close raise DamagedDataError:
Qdrant Edge itself loads a shard without its segments as an almost empty one. Only shard
folders left by a rebuild are deleted, once the active shard has opened and passed the checks.

Writes go to the shard's write-ahead log before ``update`` returns, so an upserted memory
survives a crash of the process (kill -9). ``flush`` (done on close) also persists segments
and is what protects against power loss; see docs/storage.md.

New points land in one plain segment that queries scan exactly in float32. ``optimize()``
seals it, once it holds :data:`SEAL_SIZE` memories, into a segment whose int8-quantized
vectors are scanned about twice as fast (hits are rescored with the float vectors). No HNSW
graph is built: building one holds the GIL for minutes at 100k memories, sealing a segment
takes about a second. The daemon calls ``optimize()`` at quiet moments

The parts: :mod:`.store` (:class:`EdgeStore`: open, the points, upkeep and rebuild),
:mod:`.folder` (the folder lock, store.json, stale shard folders), :mod:`.checks` (what
opening checks), :mod:`.shard` (the shard's settings, creating and loading it) and
:mod:`.search` (filters and query requests).
"""

from .checks import (
    SEGMENT_PARTS,
    count_problem,
    incomplete_segments,
    sample_problem,
    segment_folders,
    segments_problem,
)
from .folder import META_FILE, SHARD_DIR, FolderLock, read_meta, write_meta
from .search import edge_filter
from .shard import SEAL_SIZE, lacks_engine_field, open_shard, shard_config
from .store import EdgeStore

__all__ = [
    "META_FILE",
    "SEAL_SIZE",
    "SEGMENT_PARTS",
    "SHARD_DIR",
    "EdgeStore",
    "FolderLock",
    "count_problem",
    "edge_filter",
    "incomplete_segments",
    "lacks_engine_field",
    "open_shard",
    "read_meta",
    "sample_problem",
    "segment_folders",
    "segments_problem",
    "shard_config",
    "write_meta",
]
