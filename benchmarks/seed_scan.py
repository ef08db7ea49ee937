"""What the seeds cost a decision: the engine's seed pool and the detector's decision with
100 to 20,000 unplaced memories (issue 38: "detection at 20k unplaced memories costs no more
per memory than at 1k").

    python benchmarks/seed_scan.py [--decisions 300] [--repeats 5] [--write]

Each run fills the engine's own :class:`~tribalmemory.episodes.state.EngineState` with N
seeds of two projects (one every 30 s, random 384-d vectors, three-word texts), then times
``seed_pool`` + ``Matcher.decide`` for new memories of one project (no active episodes: the
seeds are all there is to score). Prints per N the median and p95 of a decision over all runs
and the spread of the runs' medians; no store, no embedding model (what is timed is only the
seeds' part of a decision)."""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import numpy as np

from tribalmemory.config import EpisodesConfig
from tribalmemory.episodes.detector import MemoryFeatures
from tribalmemory.episodes.state import EngineState

SIZES = (100, 1_000, 5_000, 10_000, 20_000)
T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = [f"w{k}" for k in range(5000)]


def features(rng: random.Random, k: int, at: datetime) -> MemoryFeatures:
    vector = np.asarray([rng.gauss(0, 1) for _ in range(384)])
    text = " ".join(rng.choice(WORDS) for _ in range(3))
    return MemoryFeatures.from_text(f"m{k}", vector / np.linalg.norm(vector), text, (), "a", at)


def run(size: int, decisions: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    state = EngineState(EpisodesConfig(), cast(Any, None), time.time)
    for k in range(size):
        state.memory_projects[f"m{k}"] = "p1" if k % 2 else "p2"
        state.seeds[f"m{k}"] = features(rng, k, T0 + timedelta(seconds=30 * k))
    news = [
        features(rng, size + j, T0 + timedelta(seconds=30 * (size + j))) for j in range(decisions)
    ]
    for memory in news:
        state.memory_projects[memory.id] = "p1"
    out = []
    for memory in news:
        started = time.perf_counter()
        pool = state.seed_pool(memory)
        state.matcher.decide(memory, [], pool, doubt_share=0.0, project="p1", seeds_eligible=True)
        out.append((time.perf_counter() - started) * 1000)
    return out


def table(decisions: int, repeats: int) -> str:
    lines = [
        f"Per decision, the seeds' part (`python benchmarks/seed_scan.py`: {decisions} decisions "
        f"x {repeats} runs per size, one process, on {os.cpu_count()} CPUs with a load "
        f"average of {os.getloadavg()[0]:.1f} when it started): the engine's seed pool and "
        "the detector's decision over N unplaced memories of two projects, all in the active "
        "window; a decision scores at most the 1,024 most recent of its project's.",
        "",
        "| seeds | median ms | p95 ms | runs' medians |",
        "|---:|---:|---:|---|",
    ]
    for size in SIZES:
        runs = [run(size, decisions, seed) for seed in range(repeats)]
        every = sorted(x for r in runs for x in r)
        medians = [statistics.median(r) for r in runs]
        p95 = every[int(0.95 * (len(every) - 1))]
        lines.append(
            f"| {size:,} | {statistics.median(every):.2f} | {p95:.2f} | "
            f"{min(medians):.2f}-{max(medians):.2f} |"
        )
        print(lines[-1], flush=True)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--decisions", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = ap.parse_args(argv)
    text = table(args.decisions, args.repeats)
    print(text)
    if args.write:
        from report import write_section

        write_section("seed-scan", "## Seeds per decision\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
