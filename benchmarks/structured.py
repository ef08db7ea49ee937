"""Structured episodes: extraction cost per closed episode, and the session-start context.

    python benchmarks/structured.py STREAM.jsonl [--episodes 1000] [--no-write]

1. Extraction: replays the labelled stream through ``remember()`` in its own time (embedding
   detection, LLM summaries against the test suite's fake OpenAI-compatible server on
   127.0.0.1 priced as gpt-4o-mini by litellm, answering structured records), closes every
   episode, and reports LLM calls and USD per closed episode by purpose, how many records came
   from the LLM, and how many calls had any purpose other than the summary ones (the target:
   none — the record rides in the final / regenerate answer).
2. Context: builds a store of ``--episodes`` synthetic episodes (3 % active, 10 % failed, each
   with lessons and decisions, each lesson a LESSON memory) and times ``GET /v1/context``
   through the API (p50 / p95 over 60 calls, with and without a query) and its size. The
   LESSON / DECISION memories are embedded and stored in batches of 64 (the engine writes
   them one by one as episodes change; batching only shortens the set-up).

Writes the "structured" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from detection import StreamClock  # noqa: E402
from detector_sim import load_stream  # noqa: E402
from fakellm import FakeLLM  # noqa: E402
from report import write_section  # noqa: E402

from tribalmemory.config import config_from_dict  # noqa: E402
from tribalmemory.episodes import derived  # noqa: E402
from tribalmemory.episodes import structured as records  # noqa: E402
from tribalmemory.episodes.store import EpisodeRow  # noqa: E402
from tribalmemory.models import Memory, SourceType  # noqa: E402
from tribalmemory.runtime import start_runtime  # noqa: E402
from tribalmemory.timeutil import from_epoch  # noqa: E402

SUMMARY_PURPOSES = {"classify", "update", "regenerate", "final"}
TOPICS = [
    "refresh token rotation",
    "postgres migration lock timeout",
    "flaky CI cache step",
    "billing webhook retries",
    "search index rebuild",
    "iOS push notifications",
    "feature flag cleanup",
    "S3 upload multipart errors",
]


class Dropped(logging.Handler):
    """Counts the WARNINGs for dropped parts of LLM structured answers."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "LLM structured answer" in record.getMessage():
            self.count += 1


async def extraction(path: str, base_url: str) -> dict[str, Any]:
    stream = load_stream(path)
    dropped = Dropped()
    logging.getLogger("tribalmemory.episodes").addHandler(dropped)
    with tempfile.TemporaryDirectory() as data:
        settings = {"detector_strategy": "embedding", "api_base": base_url}
        config = config_from_dict({"data_dir": data, "episodes": settings})
        clock = StreamClock()
        runtime = await start_runtime(config, run_scheduler=False, clock=clock)
        plugin = runtime.episodes
        await plugin.summariser.check()
        for record in stream:
            clock.now = record.created_at.timestamp()
            await runtime.api.remember(
                record.content,
                tags=sorted(record.tags),
                source_instance=record.source_instance or None,
                created_at=record.created_at,
                skip_dedup=True,
            )
        await plugin.worker.drain(600)
        clock.now += (config.episodes.active_window_days + 1) * 86400.0
        await plugin.engine.upkeep.tick()
        await plugin.worker.drain(600)
        rows = [r for r in plugin.store.episodes.find(None, 10_000, 0, {}) if r.memory_count]
        closed = [r for r in rows if r.status != "active"]
        costs = plugin.summariser.costs()
        out = {
            "memories": len(stream),
            "closed": len(closed),
            "llm_records": sum(1 for r in closed if r.structured.get("source") == "llm"),
            "lessons": sum(len(r.structured.get("lessons") or []) for r in closed),
            "decisions": sum(len(r.structured.get("decisions") or []) for r in closed),
            "calls": costs.get("calls", 0),
            "usd": costs.get("spend_usd", 0.0),
            "by_purpose": costs.get("by_purpose", {}),
            "dropped": dropped.count,
        }
        await runtime.stop()
    logging.getLogger("tribalmemory.episodes").removeHandler(dropped)
    return out


def synthetic_row(index: int, now: float) -> tuple[EpisodeRow, list[Memory]]:
    """Episode ``index`` of the context store: its row (with a structured record) and the
    member-like memories its record cites (not stored: only its lessons are)."""
    topic = TOPICS[index % len(TOPICS)]
    status = "active" if index % 33 == 0 else "closed"
    outcome = "ongoing" if status == "active" else ("failure" if index % 10 == 1 else "success")
    start = now - (1000 - index) * 3600.0
    memories = [
        Memory(
            f"{index:08d}-0000-4000-8000-{j:012d}",
            f"{topic}: step {j} of episode {index}",
            SourceType.AUTO_CAPTURE,
            "codex",
            [topic.split()[0]],
            None,
            from_epoch(start + j * 600),
            from_epoch(start + j * 600),
        )
        for j in range(4)
    ]
    ids = [m.id for m in memories]
    fresh = {
        "task": f"Fix {topic} (#{index})",
        "outcome": outcome,
        "outcome_reason": f"{outcome}: synthetic",
        "decisions": [
            {
                "at": None,
                "context": f"{topic} keeps failing",
                "options": ["retry", "redesign"],
                "chosen": f"Add a guard around {topic} ({index})",
                "rationale": "cheapest safe option",
                "outcome": None,
                "memory_ids": [ids[1]],
            }
        ],
        "events": [{"at": None, "type": "error", "text": "it failed", "memory_ids": [ids[0]]}],
        "lessons": [
            {
                "text": f"For {topic}, check the timeout settings first ({index})",
                "memory_ids": ids[2:3],
            },
            {"text": f"Write a regression test for {topic} ({index})", "memory_ids": ids[3:]},
        ],
    }
    record = records.finish(fresh, None, memories, "llm")
    row = EpisodeRow.new(
        f"{topic.capitalize()} #{index}",
        "llm",
        start,
        summary=f"Work on {topic}.",
        summary_kind="llm",
        status=status,
        closed_at=None if status == "active" else start + 3000,
        last_activity=start + 1800,
        metadata={"outcome": outcome, "tags": [topic.split()[0]]},
        structured=record,
    )
    return row, memories


async def context_latency(count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as data:
        config = config_from_dict({"data_dir": data, "episodes": {"enabled": True}})
        runtime = await start_runtime(config, run_scheduler=False)
        plugin = runtime.episodes
        engine = plugin.engine
        now = time.time()
        built = [synthetic_row(i, now) for i in range(count)]
        store = plugin.store
        with store.transaction() as db:
            for row, _ in built:
                store.episodes.insert(db, row)
        started = time.perf_counter()
        owned = [
            m
            for row, memories in built
            for m in derived.memories(row, row.structured, memories, row.title, from_epoch(now))
        ]
        service = runtime.service
        for chunk in range(0, len(owned), 64):  # batched: what write_derived does one by one
            batch = owned[chunk : chunk + 64]
            vectors = await service.embed_background([m.content for m in batch])
            await service._upsert(batch, vectors)
        written = time.perf_counter() - started
        await engine.context_builder.counter()  # litellm imported once, as the daemon does
        pattern_ms = []
        for _ in range(5):  # patterns computed afresh (as after an episode changed)
            engine.pattern_finder._cache = None
            t0 = time.perf_counter()
            found = await engine.pattern_finder.all()
            pattern_ms.append((time.perf_counter() - t0) * 1000)
        timings: dict[str, list[float]] = {"query": [], "no query": []}
        sizes: dict[str, dict[str, Any]] = {}
        for i in range(60):
            for kind, query in (("query", TOPICS[i % len(TOPICS)]), ("no query", None)):
                t0 = time.perf_counter()
                answer = await runtime.api.context(query=query, budget_tokens=1500)
                timings[kind].append((time.perf_counter() - t0) * 1000)
                sizes[kind] = answer
        await runtime.stop()

    def stats(values: list[float]) -> tuple[float, float]:
        ordered = sorted(values)
        return statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]

    return {
        "episodes": count,
        "lesson_memories": sum(len(r.structured["lessons"]) for r, _ in built),
        "decision_memories": sum(len(r.structured["decisions"]) for r, _ in built),
        "write_seconds": written,
        "patterns": len(found),
        "antipatterns": sum(1 for p in found if p["kind"] == "antipattern"),
        "pattern_ms": statistics.median(pattern_ms),
        "timings": {k: stats(v) for k, v in timings.items()},
        "sizes": {
            k: (
                a["used_tokens"],
                len(a["text"]),
                len(a["active"]),
                len(a["failed"]),
                len(a["patterns"]),
                len(a["lessons"]),
                a["truncated"],
            )
            for k, a in sizes.items()
        },
    }


def render(path: str, ex: dict[str, Any], ctx: dict[str, Any]) -> str:
    closed = max(1, ex["closed"])
    extra = sum(v["calls"] for k, v in ex["by_purpose"].items() if k not in SUMMARY_PURPOSES)
    lines = [
        "## Structured episodes",
        "",
        f"`python benchmarks/structured.py {Path(path).name} --episodes {ctx['episodes']}` — "
        "embedding detection, LLM summaries against the fake LLM server priced as gpt-4o-mini.",
        "",
        "### Extraction (one call: the final summary's)",
        "",
        "| memories | closed episodes | LLM records | lessons | decisions | parts dropped | "
        "LLM calls / closed episode | USD / closed episode | calls of another purpose |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {ex['memories']} | {ex['closed']} | {ex['llm_records']} | {ex['lessons']} | "
        f"{ex['decisions']} | {ex['dropped']} | {ex['calls'] / closed:.2f} | "
        f"{ex['usd'] / closed:.6f} | {extra} |",
        "",
        "| purpose | calls | tokens | USD | USD / closed episode |",
        "|---|---:|---:|---:|---:|",
    ]
    for purpose, v in sorted(ex["by_purpose"].items()):
        lines.append(
            f"| {purpose} | {v['calls']} | {v['tokens']} | {v['cost_usd']:.5f} | "
            f"{v['cost_usd'] / closed:.6f} |"
        )
    lines += [
        "",
        f"### Session-start context at {ctx['episodes']} episodes",
        "",
        f"{ctx['lesson_memories']} LESSON and {ctx['decision_memories']} DECISION memories "
        f"(written in {ctx['write_seconds']:.1f} s, embedding included); `budget_tokens` "
        "1500; 60 calls each through `TribalAPI.context`.",
        "",
        "| call | p50 ms | p95 ms | used tokens | characters | active | failed | patterns | "
        "lessons | truncated |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for kind in ("query", "no query"):
        p50, p95 = ctx["timings"][kind]
        used, chars, active, failed, patterns, lessons, truncated = ctx["sizes"][kind]
        lines.append(
            f"| {kind} | {p50:.1f} | {p95:.1f} | {used} | {chars} | {active} | {failed} | "
            f"{patterns} | {lessons} | {truncated} |"
        )
    lines += [
        "",
        f"Patterns afresh (after a closed episode changed; cached otherwise): "
        f"{ctx['pattern_ms']:.0f} ms median for {ctx['patterns']} patterns "
        f"({ctx['antipatterns']} anti-patterns) from "
        f"{ctx['lesson_memories'] + ctx['decision_memories']} lessons and decisions.",
        "",
        NOTES,
    ]
    return "\n".join(lines)


NOTES = """How to read this:
- The structured record is asked for in the `regenerate` and `final` prompts and answered in
  the same JSON as the summary, so extraction adds output tokens, not calls: "calls of another
  purpose" counts every call that is not classify / update / regenerate / final (target 0).
  The fake server's answers are heuristic (cue words), so "LLM records" and the counts of
  lessons and decisions measure the plumbing, not a model's quality.
- Context: the target is p50 ≤ 50 ms at 1 000 episodes. With a query the time is mostly the
  hybrid search over LESSON / DECISION memories (one embedding of the query, shared by the
  patterns and lessons sections); token counting uses litellm's `token_counter` once per
  line. Patterns are cached until a closed episode changes (closes, is edited or deleted);
  the first context call after such a change pays the "patterns afresh" time."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stream")
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    with FakeLLM() as fake:
        os.environ["OPENAI_API_KEY"] = "x"
        ex = asyncio.run(extraction(args.stream, fake.base_url))
    os.environ.pop("OPENAI_API_KEY", None)
    ctx = asyncio.run(context_latency(args.episodes))
    text = render(args.stream, ex, ctx)
    print(text)
    if not args.no_write:
        write_section("structured", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
