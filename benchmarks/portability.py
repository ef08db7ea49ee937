"""Export, import and backup throughput on the real engine (episodes on, embedding detector).

    python benchmarks/portability.py [--count 10000] [--no-write]

Fills a fresh data folder with ``--count`` memories (20 interleaved threads, one every 5
minutes, stored in batches of 500), then measures in-process (no HTTP): ``export`` with and
without vectors into a file, ``backup`` of the folder, and ``import`` of the export with its
vectors into a second fresh folder (same model: nothing is embedded, every memory goes through
the episode engine's write-time detection) and, without vectors, into a third (embedding too).

Prints the table and writes section "portability" of docs/benchmarks.md (unless --no-write).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from report import write_section

from tribalmemory.config import load_config
from tribalmemory.portability import backup, exporter, importer
from tribalmemory.runtime import start_runtime

EPISODES = {"enabled": True, "detector_strategy": "embedding", "summary_debounce_seconds": 30}
TOPICS = [f"service-{k}" for k in range(20)]
PROBLEMS = ["times out", "returns stale data", "drops messages", "leaks memory", "fails health"]
CAUSES = ["a missing index", "a retry storm", "an expired certificate", "the cache TTL", "DNS"]


def config_at(folder: Path) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump({"data_dir": str(folder), "episodes": EPISODES}), "utf-8")
    os.environ["TRIBAL_MEMORY_HOME"] = str(folder)
    return load_config(path)


def items(count: int) -> list[dict[str, Any]]:
    rng = random.Random(5)
    out = []
    for i in range(count):
        topic = rng.choice(TOPICS)
        minute = 5 * i
        out.append(
            {
                "content": f"The {topic} {rng.choice(PROBLEMS)}; traced to {rng.choice(CAUSES)}"
                f" (#{i})",
                "tags": [topic],
                "created_at": f"2025-{1 + minute // 43200:02d}-{1 + minute % 43200 // 1440:02d}"
                f"T{minute % 1440 // 60:02d}:{minute % 60:02d}:00Z",
                "skip_dedup": True,
            }
        )
    return out


async def fill(folder: Path, count: int) -> None:
    runtime = await start_runtime(config_at(folder))
    try:
        data = items(count)
        for start in range(0, count, 500):
            await runtime.api.remember_batch(data[start : start + 500])
        await runtime.episodes.worker.drain(3600)
    finally:
        await runtime.stop()


async def timed_export(folder: Path, target: Path, vectors: bool) -> float:
    runtime = await start_runtime(config_at(folder))
    try:
        started = time.perf_counter()
        with target.open("w", encoding="utf-8") as handle:
            async for line in exporter.export_lines(runtime.api, None, vectors):
                handle.write(line)
        return time.perf_counter() - started
    finally:
        await runtime.stop()


async def timed_backup(folder: Path, target: Path) -> float:
    runtime = await start_runtime(config_at(folder))
    try:
        started = time.perf_counter()
        await backup.backup(runtime.service.config, runtime.service, target)
        return time.perf_counter() - started
    finally:
        await runtime.stop()


async def timed_import(folder: Path, source: Path) -> tuple[float, int]:
    runtime = await start_runtime(config_at(folder))
    try:
        started = time.perf_counter()
        report = await importer.apply(runtime.api, source)
        return time.perf_counter() - started, report.stored
    finally:
        await runtime.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    n = args.count
    rows = []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="tm-portability-") as tmp:
        root = Path(tmp)
        asyncio.run(fill(root / "source", n))
        plain, full = root / "plain.jsonl", root / "vectors.jsonl"
        seconds = asyncio.run(timed_export(root / "source", plain, False))
        rows.append(("export", f"{n / seconds:,.0f}", f"{seconds:.1f}", plain.stat().st_size))
        seconds = asyncio.run(timed_export(root / "source", full, True))
        rows.append(
            ("export --vectors", f"{n / seconds:,.0f}", f"{seconds:.1f}", full.stat().st_size)
        )
        seconds = asyncio.run(timed_backup(root / "source", root / "backup"))
        rows.append(("backup (running runtime)", "", f"{seconds:.1f}", ""))
        seconds, stored = asyncio.run(timed_import(root / "copy", full))
        assert stored == n, stored
        rows.append(
            ("import with vectors (detection on)", f"{n / seconds:,.0f}", f"{seconds:.1f}", "")
        )
        seconds, stored = asyncio.run(timed_import(root / "embed", plain))
        assert stored == n, stored
        rows.append(
            ("import, embedding (detection on)", f"{n / seconds:,.0f}", f"{seconds:.1f}", "")
        )
    load = max(load_before, os.getloadavg()[0])
    lines = [
        f"## Export, import and backup ({n:,} memories)",
        "",
        f"`python benchmarks/portability.py --count {n}` on {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average up to {load:.0f} during the run; in-process (no "
        "HTTP), episodes on with the embedding detector, the bundled model.",
        "",
        "| Step | memories/s | seconds | file bytes |",
        "|---|---:|---:|---:|",
        *(f"| {a} | {b} | {c} | {d if d == '' else f'{d:,}'} |" for a, b, c, d in rows),
        "",
        "Import stores one memory at a time through the write-time hooks (the episode engine "
        "places each), so it is bounded by detection and, without vectors, by embedding (64 "
        "texts per model run). The issue's target of 200 memories/s with detection is compared "
        "against the first import row. Backup pauses writes (and the store's queries) only "
        "while the store folder is copied.",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section("portability", text)


if __name__ == "__main__":
    main()
