"""Storage engine benchmark: Qdrant Edge vs qdrant-client's in-process (local) mode.

Both run through Tribal Memory's own store classes, so the numbers include its per-call work
(payload building, BM25, filter translation). Synthetic data: random unit vectors (384 dims)
and short texts drawn from a 2,000-word vocabulary.

    python benchmarks/storage_bench.py --sizes 10000,100000

prints a markdown table and writes it into docs/storage.md (section "Measured").
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from tribalmemory.models import Memory, SourceType
from tribalmemory.storage import EdgeStore, MemoryFilter
from tribalmemory.timeutil import utc_now

DIM = 384
BATCH = 500
DOCS = Path(__file__).resolve().parents[1] / "docs" / "storage.md"
START, END = "<!-- measured:start -->", "<!-- measured:end -->"
TAGS = [f"tag{i}" for i in range(20)]
TYPES = [
    SourceType.USER_EXPLICIT,
    SourceType.AUTO_CAPTURE,
    SourceType.CORRECTION,
    SourceType.LEGACY,
]


@dataclass
class Result:
    engine: str
    size: int
    values: dict[str, str] = field(default_factory=dict)
    skipped: str = ""


def synthetic(size: int, seed: int = 0) -> tuple[list[Memory], np.ndarray]:
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(2000)]
    weights = 1.0 / np.arange(1, len(vocab) + 1)  # Zipf-like word frequencies
    weights /= weights.sum()
    words = rng.choice(len(vocab), size=(size, 10), p=weights)
    now = utc_now()
    memories = []
    for i in range(size):
        memories.append(
            Memory(
                id=str(uuid.uuid4()),
                content=" ".join(vocab[w] for w in words[i]),
                source_type=TYPES[i % len(TYPES)],
                source_instance="bench",
                tags=[TAGS[i % 20], TAGS[(i * 7) % 20]],
                context=None,
                created_at=now - timedelta(minutes=int(i)),
                updated_at=now,
                metadata={"episode_id": f"ep-{i % 500}"},
            )
        )
    vectors = rng.standard_normal((size, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return memories, vectors


def timed(fn: Callable[[int], Any], runs: int) -> list[float]:
    """Milliseconds per call of fn(0) .. fn(runs - 1), after warm-ups fn(runs), fn(runs + 1)."""
    fn(runs)
    fn(runs + 1)
    out = []
    for i in range(runs):
        start = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def pct(samples: list[float], q: float) -> float:
    return float(np.percentile(samples, q))


def ms(samples: list[float]) -> str:
    return f"{pct(samples, 50):.2f} / {pct(samples, 95):.2f}"


def open_engine(engine: str, folder: Path) -> Any:
    if engine == "qdrant-edge":
        return EdgeStore.open(folder, "bench", DIM)
    from tribalmemory.storage.server import ServerStore

    return ServerStore.open_local(folder, "bench", "bench", DIM)


def run(engine: str, size: int, runs: int, data: tuple[list[Memory], np.ndarray]) -> Result:
    memories, vectors = data
    result = Result(engine, size)
    values = result.values
    folder = Path(tempfile.mkdtemp(prefix="tm-bench-"))
    rng = np.random.default_rng(1)
    queries = rng.standard_normal((runs + 2, DIM)).astype(np.float32)
    texts = [" ".join(f"w{int(w)}" for w in rng.integers(0, 300, 3)) for _ in range(runs + 2)]
    where = MemoryFilter(tags_any=["tag3"], after=utc_now() - timedelta(days=30))
    try:
        store = open_engine(engine, folder)
        start = time.perf_counter()
        for lo in range(0, size, BATCH):
            store.upsert(memories[lo : lo + BATCH], vectors[lo : lo + BATCH])
        values["upsert, batches of 500 (points/s)"] = f"{size / (time.perf_counter() - start):,.0f}"
        extra, extra_vectors = synthetic(runs + 2, seed=size + 7)
        single = timed(lambda i: store.upsert([extra[i]], extra_vectors[i : i + 1]), runs)
        values["upsert, one memory (ms p50 / p95)"] = ms(single)
        values["dense top-10 (ms p50 / p95)"] = ms(
            timed(lambda i: store.dense_search(queries[i], 10), runs)
        )
        values["hybrid top-10, RRF (ms p50 / p95)"] = ms(
            timed(lambda i: store.search(texts[i], queries[i], 10), runs)
        )
        values["hybrid + filter (ms p50 / p95)"] = ms(
            timed(lambda i: store.search(texts[i], queries[i], 10, where), runs)
        )
        counts = timed(lambda i: store.count(where), runs)
        values["count with filter (ms p50)"] = f"{pct(counts, 50):.2f}"
        if engine == "qdrant-edge":  # brute force until optimize() builds HNSW
            exact = [[h.memory.id for h in store.dense_search(q, 10)] for q in queries[:50]]
            start = time.perf_counter()
            store.optimize()
            values["optimize: build HNSW (s)"] = f"{time.perf_counter() - start:.1f}"
            values["dense top-10 after optimize (ms p50 / p95)"] = ms(
                timed(lambda i: store.dense_search(queries[i], 10), runs)
            )
            values["hybrid top-10 after optimize (ms p50 / p95)"] = ms(
                timed(lambda i: store.search(texts[i], queries[i], 10), runs)
            )
            values["hybrid + filter after optimize (ms p50 / p95)"] = ms(
                timed(lambda i: store.search(texts[i], queries[i], 10, where), runs)
            )
            hnsw = [[h.memory.id for h in store.dense_search(q, 10)] for q in queries[:50]]
            recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact, hnsw, strict=True)])
            label = "dense recall@10 after optimize (random vectors: HNSW's worst case)"
            values[label] = f"{recall:.3f}"
        start = time.perf_counter()
        store.close()
        values["close (s)"] = f"{time.perf_counter() - start:.2f}"
        start = time.perf_counter()
        store = open_engine(engine, folder)
        values["reopen (s)"] = f"{time.perf_counter() - start:.2f}"
        assert store.count() == size + runs + 2, "reopened store lost points"
        store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return result


def table(results: list[Result]) -> str:
    metrics: list[str] = []
    for result in results:
        metrics += [m for m in result.values if m not in metrics]
    header = "| metric | " + " | ".join(f"{r.engine} @ {r.size:,}" for r in results) + " |"
    lines = [header, "|---|" + "---|" * len(results)]
    for metric in metrics:
        cells = [r.values.get(metric, "skipped" if r.skipped else "n/a") for r in results]
        lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    notes = [f"- {r.engine} @ {r.size:,}: skipped, {r.skipped}" for r in results if r.skipped]
    return "\n".join(lines + ([""] + notes if notes else []))


def environment() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    engines = (
        f"qdrant-edge-py {version('qdrant-edge-py')}, qdrant-client {version('qdrant-client')}"
    )
    return (
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.system()}; "
        f"{engines}; load average at start {load:.2f}."
    )


def write_docs(text: str) -> None:
    docs = DOCS.read_text(encoding="utf-8")
    if START not in docs or END not in docs:
        raise SystemExit(f"{DOCS} lacks the {START} ... {END} markers")
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    DOCS.write_text(pattern.sub(lambda _: f"{START}\n{text}\n{END}", docs), encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated point counts")
    parser.add_argument("--runs", type=int, default=200, help="queries per measurement (edge)")
    parser.add_argument(
        "--local-runs",
        type=int,
        default=30,
        help="queries per measurement for qdrant-client local mode (each takes ~0.1-1 s)",
    )
    parser.add_argument(
        "--local-max",
        type=int,
        default=20000,
        help="skip qdrant-client local mode above this many points",
    )
    parser.add_argument("--no-docs", action="store_true", help="do not update docs/storage.md")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    results: list[Result] = []
    env = environment()
    print(env, file=sys.stderr)
    for size in sizes:
        data = synthetic(size)
        for engine in ("qdrant-edge", "qdrant-client local"):
            if engine != "qdrant-edge" and size > args.local_max:
                reason = (
                    f"over --local-max {args.local_max:,}: it evaluates filters point by "
                    "point in Python, so expect roughly size/10k times its 10k numbers"
                )
                results.append(Result(engine, size, skipped=reason))
                print(f"{engine} @ {size:,}: skipped ({reason})", file=sys.stderr)
                continue
            runs = args.runs if engine == "qdrant-edge" else args.local_runs
            print(f"{engine} @ {size:,} ...", file=sys.stderr, flush=True)
            results.append(run(engine, size, runs, data))
    text = table(results) + f"\n\nMeasured with `benchmarks/storage_bench.py`: {env}"
    print(text)
    if not args.no_docs:
        write_docs(text)


if __name__ == "__main__":
    main()
