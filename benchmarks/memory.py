"""Memory (RSS) of a real daemon fed the largest valid batches.

    python benchmarks/memory.py [--texts 380] [--chars 19900] [--no-write]

Spawns ``tribalmemory serve`` (fresh data folder, episodes off so that only the request path
is measured) and reads its resident memory (``VmRSS``) and peak (``VmHWM``) from
``/proc/<pid>/status``: once ready, after one batch of ``--texts`` memories of ``--chars``
characters each (380 × 19,900 ≈ 7.6 MB of JSON, under the 8 MB ``server.max_body_bytes``),
and after three such batches sent at once (two are stored, the third gets 429 with
Retry-After). Linux only. Run it on an otherwise quiet machine: it embeds ~760 long texts.

Prints the table and writes section "memory" of docs/benchmarks.md (unless --no-write).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from latency import start_daemon
from report import write_section

from tribalmemory.embeddings.embedder import TOKEN_BUDGET
from tribalmemory.service.remembering import MAX_CONCURRENT_BATCHES

NOTE = f"""How to read this:
- Before the bound (one ONNX run per 64 texts, any number of batches at once), the same batch
  took a daemon from 311 MB to 3.2 GB, two at once to 5.2 GB, never released (issue 18); in
  runs of 64 texts one batch took 44 s here, in runs of 8 long texts (2,048 tokens) 22–27 s.
- What bounds the memory: a batch is embedded in runs of at most {TOKEN_BUDGET} tokens (texts ×
  longest text, counted by the model's tokenizer, which cuts a text at 256 tokens), so one
  run's working memory is bounded whatever the batch holds (~300 MB in runs of 2,048 tokens,
  less in smaller ones); at most 2 batches run at once (a third gets 429 with
  `Retry-After: 2`); a body over `server.max_body_bytes` (8 MB by default) gets 413 before it
  is parsed. onnxruntime keeps its memory arena after a run, so the
  RSS stays near the peak: expect about 0.6 GB for a daemon that serves large batches.
- Texts are counted by the model's tokenizer, so text in scripts with one token per character
  (e.g. Chinese) keeps to the budget too."""

WORDS = (
    "the refresh token rotation race postgres migration celery queue backlog grafana panel "
    "deploy staging port billing invoice retry timeout cache eviction schema index replica"
).split()


def status_mb(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of ``pid`` in MB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values


def batch(count: int, chars: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    items = []
    for i in range(count):
        words: list[str] = []
        length = 0
        while length < chars:
            words.append(rng.choice(WORDS))
            length += len(words[-1]) + 1
        items.append({"content": f"{seed}-{i} " + " ".join(words)[: chars - 12]})
    return items


def post(url: str, items: list[dict[str, Any]]) -> tuple[int, float, str]:
    started = time.perf_counter()
    answer = httpx.post(f"{url}/v1/remember/batch", json={"memories": items}, timeout=1800)
    return answer.status_code, time.perf_counter() - started, answer.headers.get("Retry-After", "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=380)
    parser.add_argument("--chars", type=int, default=19_900)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if not sys.platform.startswith("linux"):
        raise SystemExit("reads /proc/<pid>/status: Linux only")

    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="tm-memory-") as folder:
        home = Path(folder)
        daemon = start_daemon(home, home / "daemon.log", {"enabled": False})
        pid = daemon.process.pid
        try:
            ready = status_mb(pid)
            rows.append(("ready (one recall done)", f"{ready['VmRSS']:.0f}", "", ""))
            body = batch(args.texts, args.chars, 1)
            size = len(httpx.Request("POST", "http://x", json={"memories": body}).content)
            code, seconds, _ = post(daemon.url, body)
            one = status_mb(pid)
            rows.append(
                (
                    f"after one batch ({size / 1e6:.1f} MB)",
                    f"{one['VmRSS']:.0f}",
                    f"{one['VmHWM']:.0f}",
                    f"{code} in {seconds:.0f} s",
                )
            )
            bodies = [batch(args.texts, args.chars, seed) for seed in (2, 3, 4)]
            with ThreadPoolExecutor(3) as pool:
                answers = list(pool.map(lambda items: post(daemon.url, items), bodies))
            three = status_mb(pid)
            summary = ", ".join(
                f"{c}" + (f" (Retry-After {r})" if r else f" in {s:.0f} s") for c, s, r in answers
            )
            rows.append(
                (
                    "after three batches sent at once",
                    f"{three['VmRSS']:.0f}",
                    f"{three['VmHWM']:.0f}",
                    summary,
                )
            )
        finally:
            daemon.stop()

    table = [
        "| moment | RSS (MB) | peak RSS so far (MB) | answers |",
        "|---|---:|---:|---|",
        *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows],
    ]
    markdown = "\n".join(
        [
            "## Memory",
            "",
            f"`python benchmarks/memory.py` — a real daemon (episodes off), batches of "
            f"{args.texts} memories × {args.chars:,} characters, embedded in runs of at most "
            f"{TOKEN_BUDGET} tokens, at most {MAX_CONCURRENT_BATCHES} batches at once.",
            "",
            *table,
            "",
            f"Measured: Python {platform.python_version()}, {platform.machine()}, "
            f"{len(os.sched_getaffinity(0))} CPUs shared with other jobs.",
            "",
            NOTE,
        ]
    )
    print(markdown)
    if not args.no_write:
        write_section("memory", markdown)


if __name__ == "__main__":
    main()
