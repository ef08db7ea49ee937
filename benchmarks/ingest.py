"""Conversations in: segmentation, throughput and re-ingest time of ``ingest_conversation``.

    python benchmarks/ingest.py [--locomo DIR] [--no-write]

Each LoCoMo conversation of --locomo (``/work/shared/recall/locomo``: read at run time, never
copied) is ingested as one conversation, through the in-process API the daemon serves, into a
fresh data folder in the default configuration (episodes on, no LLM key: embedding
detection): each turn a message ``{role: user, name: speaker, content, timestamp}``, dated
its session's date plus one minute per turn, in pages of 1,000 messages. Reported per
conversation:

- the episodes the engine made against the conversation's sittings (its sessions): pairwise
  precision, recall and F1 over the turns (a turn in no episode is in no cluster), and
  episodes against sessions;
- turns/s of the first ingest (wall time of the calls, embedding and the episode engine's
  placements included, the models loaded before; the engine's later work, summaries, is not
  waited for), and the
  time of the same conversation sent again (which stores nothing), as a share of the first.

Writes the section "ingest" of docs/benchmarks.md (unless --no-write).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks")]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from detector_sim import scores  # noqa: E402
from recall import Dataset, load_locomo, messages_of  # noqa: E402
from report import write_section  # noqa: E402

from tribalmemory.config import config_from_dict  # noqa: E402
from tribalmemory.runtime import start_runtime  # noqa: E402

PAGE = 1000
LOCOMO = Path("/work/shared/recall/locomo")


async def ingest_all(api: Any, name: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    totals = {"stored": 0, "existing": 0, "memory_ids": []}
    for start in range(0, len(messages), PAGE):
        done = await api.ingest_conversation(
            conversation_id=name, messages=messages[start : start + PAGE], first_index=start
        )
        totals["stored"] += done["stored"]
        totals["existing"] += done["existing"]
        totals["memory_ids"] += done["memory_ids"]
    return totals


async def measure(dataset: Dataset) -> dict[str, Any]:
    messages = messages_of(dataset)
    with tempfile.TemporaryDirectory() as data:
        config = config_from_dict({"data_dir": data, "episodes": {"enabled": True}})
        runtime = await start_runtime(config, run_scheduler=False)
        try:
            api = runtime.api
            await api.recall("warm up")  # the models loaded, as in a running daemon
            await runtime.service.embed_bulk(["warm up"] * 256)
            started = time.perf_counter()
            first = await ingest_all(api, dataset.name, messages)
            first_seconds = time.perf_counter() - started
            started = time.perf_counter()
            again = await ingest_all(api, dataset.name, messages)
            again_seconds = time.perf_counter() - started
            ids = first["memory_ids"]
            stored = {m.id: m for m in runtime.service.store.get(ids)}
            annotated = runtime.service.annotate(list(stored.values()))
            pred = [annotated.get(i, {}).get("episode_id") for i in ids]
            # a turn's sitting: that of its first message (acknowledgements are folded)
            firsts = [stored[i].metadata["message_index"] for i in ids]
        finally:
            await runtime.stop()
    gold = [dataset.items[index].key.split(":")[0] for index in firsts]
    row = scores(pred, gold)
    return {
        "name": dataset.name,
        "turns": len(ids),
        "stored": first["stored"],
        "again_stored": again["stored"],
        "precision": row["precision"],
        "recall": row["recall"],
        "f1": row["f1"],
        "episodes": len({p for p in pred if p}),
        "sessions": len(set(gold)),
        "rate": len(ids) / first_seconds,
        "again_share": again_seconds / first_seconds,
    }


def render(rows: list[dict[str, Any]], seconds: float) -> str:
    lines = [
        "Each LoCoMo conversation ingested as one conversation (`ingest_conversation`, in "
        "process, episodes on, offline default), its episodes scored against its sittings "
        "(sessions): pairwise over the turns.",
        "",
        "| conversation | turns | episodes / sessions | precision | recall | F1 | turns/s "
        "(first ingest) | sent again: stored, time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['turns']} | {r['episodes']} / {r['sessions']} | "
            f"{r['precision']:.3f} | {r['recall']:.3f} | {r['f1']:.3f} | {r['rate']:.0f} | "
            f"{r['again_stored']}, {r['again_share']:.1%} |"
        )
    f1 = [r["f1"] for r in rows]
    rates = [r["rate"] for r in rows]
    lines += [
        "",
        f"F1 mean {np.mean(f1):.3f}, worst {min(f1):.3f}; turns/s median {np.median(rates):.0f} "
        f"({min(rates):.0f}–{max(rates):.0f}).",
        "",
        f"Measured with `python benchmarks/ingest.py` in {seconds / 60:.1f} min on "
        f"{os.cpu_count()} CPUs (load average {os.getloadavg()[0]:.1f} at the end).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=LOCOMO)
    parser.add_argument("--no-write", action="store_true", help="do not touch docs/benchmarks.md")
    args = parser.parse_args(argv)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        os.environ.pop(name, None)
    began = time.perf_counter()
    rows = []
    for path in sorted(args.locomo.glob("*.json")):
        row = asyncio.run(measure(load_locomo(path)))
        print(
            f"{row['name']}: F1 {row['f1']:.3f}, {row['rate']:.0f} turns/s, "
            f"again {row['again_share']:.1%}",
            file=sys.stderr,
        )
        rows.append(row)
    text = render(rows, time.perf_counter() - began)
    print(text)
    if not args.no_write:
        write_section("ingest", "## Conversations in\n\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
