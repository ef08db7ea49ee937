"""What opening a store of the former BM25 layout costs (every memory's BM25 vector in
``bm25``): the move of the engine-written memories' vectors to ``bm25_engine`` and the
rewrite of the segments that held them (docs/storage.md, *Search*), against opening it again.

    python benchmarks/bm25_migration.py --written 0,90000 --engine 10000

Synthetic data: random unit vectors (384 dims), texts from a 2,000-word vocabulary (written
memories 10 words, summaries 40, mixed), with the payload indexes, sealed into segments of
10,000 as the daemon's maintenance seals them. Prints one line per store.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import qdrant_edge as qe

from tribalmemory.models import Memory, SourceType
from tribalmemory.storage import EdgeStore, lexical
from tribalmemory.storage.base import DENSE, FLOAT_FIELDS, KEYWORD_FIELDS, SPARSE, to_payload
from tribalmemory.storage.edge import SEAL_SIZE, shard_config, write_meta
from tribalmemory.timeutil import utc_now

DIM = 384
MODEL = "synthetic"


def memories(count: int, words: int, kind: SourceType, rng: np.random.Generator) -> list[Memory]:
    vocab = np.array([f"w{i}" for i in range(2000)])
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    picks = rng.choice(vocab, size=(count, words), p=weights / weights.sum())
    now = utc_now()
    return [
        Memory(
            id=str(uuid.uuid4()),
            content=" ".join(row),
            source_type=kind,
            source_instance="bench",
            tags=[],
            context=None,
            created_at=now,
            updated_at=now,
            supersedes=None,
            metadata={},
        )
        for row in picks
    ]


def former_store(root: Path, written: int, engine: int) -> None:
    """A store as the former version wrote it, its segments sealed."""
    rng = np.random.default_rng(0)
    stored = memories(written, 10, SourceType.USER_EXPLICIT, rng)
    stored += memories(engine, 40, SourceType.EPISODE_SUMMARY, rng)
    stored = [stored[i] for i in rng.permutation(len(stored))]
    vectors = rng.standard_normal((len(stored), DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    shard = qe.EdgeShard.create(str(root / "shard-1"), shard_config(DIM, engine_field=False))
    for name in KEYWORD_FIELDS:
        shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword))
    for name in FLOAT_FIELDS:
        shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Float))
    for start in range(0, len(stored), 1000):
        points = [
            qe.Point(
                m.id, {DENSE: v.tolist(), SPARSE: lexical.document_vector(m.content)}, to_payload(m)
            )
            for m, v in zip(
                stored[start : start + 1000], vectors[start : start + 1000], strict=True
            )
        ]
        shard.update(qe.UpdateOperation.upsert_points(points))
        if (start + 1000) % SEAL_SIZE == 0:
            shard.optimize()  # sealed as maintenance seals them, SEAL_SIZE at a time
    shard.optimize()
    shard.close()
    write_meta(root, MODEL, DIM, "shard-1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--written", default="0,90000", help="written memories, comma-separated")
    parser.add_argument("--engine", type=int, default=10_000, help="engine-written memories")
    args = parser.parse_args()
    for written in (int(n) for n in args.written.split(",")):
        folder = Path(tempfile.mkdtemp(prefix="bm25-migration-"))
        try:
            former_store(folder, written, args.engine)
            times = []
            for _ in range(2):
                started = time.perf_counter()
                store = EdgeStore.open(folder, MODEL, DIM)
                times.append(time.perf_counter() - started)
                store.close()
            print(
                f"{written:,} written + {args.engine:,} engine-written memories: open with the "
                f"migration {times[0]:.2f} s, open again {times[1]:.2f} s "
                f"(load average {os.getloadavg()[0]:.1f})"
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
