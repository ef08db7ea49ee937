"""Recall latency with episodes on and off, on the same 10,000-memory store, through the daemon.

    python benchmarks/recall_latency.py [--corpus ../shared/corpus/train] [--count 10000]
        [--runs 300] [--rounds 3] [--no-write]

1. A fresh daemon in the default configuration (episodes on, no LLM key: embedding detection,
   extractive summaries) imports an export of --count memories without vectors, and runs
   until its episode work has settled: the store then holds the memories, their episodes and
   the summaries, as a user's would. The memories are real threads of work: the labelled
   streams of --corpus (``/work/shared/corpus``: IRC days, pull requests, agents' notes; read
   at run time, never copied), one stream after another, the kinds taking turns, each with its
   own times, texts, tags and authors, a day after the one before.
2. Rounds: the same data folder is served by a daemon with episodes on, then by one with
   episodes off (the next round off first), one daemon at a time (both lock the folder);
   each gets 20 warm-up recalls and then --runs recalls over HTTP, one at a time.

Prints p50 / p95 per daemon and the on / off ratios of each round, their median and range, and
writes the section "recall-latency" of docs/benchmarks.md (unless --no-write). The load
average is printed beside the figures: on a shared machine compare only figures measured
together.
"""

from __future__ import annotations

import argparse
import itertools
import os
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from detector_sim import load_stream
from fresh_daemon import LLM_KEYS, code_env, load, run_import, settled
from latency import sequential_recall, start_daemon
from report import write_section

from tribalmemory.embeddings.embedder import BUNDLED_DIM, BUNDLED_MODEL
from tribalmemory.portability import records
from tribalmemory.timeutil import to_iso

WARM_UP = 20
CORPUS = Path("/work/shared/corpus/train")


def interleaved(paths: list[Path]) -> list[Path]:
    """``paths`` with their kinds (the name's first word: irc, prs, git, synth) taking turns."""
    kinds: dict[str, list[Path]] = {}
    for path in paths:
        kinds.setdefault(path.name.split("-")[0], []).append(path)
    turns = itertools.zip_longest(*kinds.values())
    return [path for turn in turns for path in turn if path is not None]


def write_export(path: Path, corpus: Path, count: int) -> int:
    """An export (no vectors, no episodes) of the first ``count`` memories of the streams of
    ``corpus`` laid end to end, a day apart; how many streams it took."""
    lines: list[dict[str, Any]] = []
    start = datetime(2015, 1, 1, tzinfo=UTC)  # the streams take years end to end
    used = 0
    for stream in interleaved(sorted(corpus.glob("*.jsonl"))):
        found = load_stream(stream)
        if not found or len(lines) >= count:
            break
        used += 1
        shift = start - found[0].created_at
        for record in found[: count - len(lines)]:
            when = to_iso(record.created_at + shift)
            lines.append(
                {
                    "type": "memory",
                    "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{stream.name}/{record.id}")),
                    "content": record.content,
                    "source_type": "AUTO_CAPTURE",
                    "source_instance": record.source_instance or "benchmark",
                    "tags": sorted(record.tags),
                    "context": None,
                    "created_at": when,
                    "updated_at": when,
                    "metadata": {},
                }
            )
        start = found[-1].created_at + shift + timedelta(days=1)
    if len(lines) < count:
        raise SystemExit(f"{corpus} holds {len(lines)} memories, fewer than {count}")
    head = records.header(BUNDLED_MODEL, BUNDLED_DIM, lines[0]["created_at"], None, False)
    with path.open("w", encoding="utf-8") as handle:
        handle.write(records.dumps(head))
        for line in lines:
            handle.write(records.dumps(line))
        handle.write(records.dumps(records.end(len(lines), 0)))
    return used


def build(home: Path, export: Path, count: int) -> tuple[float, dict[str, Any]]:
    """Import ``export`` through a fresh daemon with episodes on; seconds to settle, and the
    store's ``/v1/stats`` then."""
    env = {**code_env(None), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    daemon = start_daemon(home, home.parent / "daemons.log", {"enabled": True}, env=env)
    try:
        run_import(home, export, count, env)
        seconds = settled(daemon.url, 900)
        if seconds is None:
            raise SystemExit("the episode work did not settle within 15 minutes")
        stats = httpx.get(f"{daemon.url}/v1/stats", trust_env=False, timeout=60).json()
        return seconds, stats
    finally:
        daemon.stop()


def measure(home: Path, episodes_on: bool, runs: int) -> list[float]:
    """Recall latencies (ms) of a daemon serving ``home`` with episodes on or off."""
    env = {**code_env(None), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    daemon = start_daemon(home, home.parent / "daemons.log", {"enabled": episodes_on}, env=env)
    try:
        sequential_recall(daemon.url, WARM_UP)
        return sequential_recall(daemon.url, runs)
    finally:
        daemon.stop()


def ms(values: list[float]) -> str:
    return f"{np.percentile(values, 50):.1f} / {np.percentile(values, 95):.1f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="labelled streams")
    parser.add_argument("--count", type=int, default=10_000, help="memories in the store")
    parser.add_argument("--runs", type=int, default=300, help="recalls per daemon")
    parser.add_argument("--rounds", type=int, default=3, help="on / off comparisons")
    parser.add_argument("--no-write", action="store_true", help="do not touch docs/benchmarks.md")
    args = parser.parse_args(argv)
    for name in LLM_KEYS:
        os.environ.pop(name, None)
    began, start_load = time.perf_counter(), load()
    rows: list[tuple[int, str, str, str, float, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        export = Path(tmp) / "export.jsonl"
        streams = write_export(export, args.corpus, args.count)
        settle, stats = build(home, export, args.count)
        kinds = stats.get("by_source_type") or {}
        episodes = sum((stats.get("episodes") or {}).values())
        store = (
            f"{stats.get('total_memories'):,} memories of {streams} streams of "
            f"`{args.corpus.name}/`, {kinds.get('EPISODE_SUMMARY', 0):,} of them episode "
            f"summaries, {episodes:,} episodes"
        )
        print(f"built: {store}; settled {settle:.1f} s after the import", flush=True)
        for index in range(args.rounds):
            order = [True, False] if index % 2 == 0 else [False, True]
            found: dict[bool, list[float]] = {}
            loads: dict[bool, float] = {}
            for on in order:
                found[on] = measure(home, on, args.runs)
                loads[on] = load()
            p50 = np.percentile(found[True], 50) / np.percentile(found[False], 50)
            p95 = np.percentile(found[True], 95) / np.percentile(found[False], 95)
            rows.append(
                (
                    index + 1,
                    ms(found[False]),
                    ms(found[True]),
                    f"{loads[False]:.1f}, {loads[True]:.1f}",
                    float(p50),
                    float(p95),
                    0.0,
                )
            )
            print(f"round {index + 1}: off {ms(found[False])}, on {ms(found[True])}", flush=True)
    p50s = [r[4] for r in rows]
    p95s = [r[5] for r in rows]
    lines = [
        f"Recall over HTTP on one store of {args.count:,} memories (imported through a daemon "
        f"with episodes on, the offline default, its episode work settled: {store}), served "
        "by a daemon "
        f"with episodes on and one with episodes off in turn: {args.runs} recalls one at a "
        f"time per daemon after {WARM_UP} warm-up ones.",
        "",
        "| round | off p50 / p95 (ms) | on p50 / p95 (ms) | on / off p50 | on / off p95 "
        "| load average (off, on) |",
        "|---|---|---|---|---|---|",
    ]
    for number, off, on, loads_text, p50, p95, _ in rows:
        lines.append(f"| {number} | {off} | {on} | {p50:.2f}× | {p95:.2f}× | {loads_text} |")
    lines += [
        "",
        f"On / off, median of {args.rounds} rounds (range): p50 {np.median(p50s):.2f}× "
        f"({min(p50s):.2f}–{max(p50s):.2f}), p95 {np.median(p95s):.2f}× "
        f"({min(p95s):.2f}–{max(p95s):.2f}).",
        "",
        f"Measured with `python benchmarks/recall_latency.py --corpus {args.corpus} --count "
        f"{args.count} --runs "
        f"{args.runs} --rounds {args.rounds}` in {(time.perf_counter() - began) / 60:.0f} min "
        f"on {os.cpu_count()} CPUs (load average {start_load:.1f} at the start).",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section("recall-latency", "## Recall latency, episodes on and off\n\n" + text)


if __name__ == "__main__":
    main()
