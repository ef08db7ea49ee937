"""What a user meets first: a fresh daemon's first remembers, and an import through the daemon.

    python benchmarks/fresh_daemon.py [--rounds 3] [--remembers 200] [--count 10000]
                                      [--before /path/to/older/checkout] [--no-write]

1. Cold start: a fresh daemon (``python -m tribalmemory serve``, new data folder) gets its
   first --remembers ``remember`` calls over HTTP one at a time, from the moment it first
   answers ``/v1/health``, with no warm-up: p50 / p95 / max, episodes off and on (hybrid
   detection with merge and split checks, the fake LLM of tests/fakellm.py answering after
   1 s, summaries debounced 2 s as in benchmarks/latency.py). Each round starts both daemons
   afresh, one after the other (off, on; the next round on, off).
2. Import through the daemon, as a user runs it: a fresh daemon in the default configuration
   (episodes on, no LLM key), then ``tribalmemory import FILE`` (the CLI, which finds the
   daemon and streams the file to it) of an export of --count memories without vectors and
   without episodes (20 interleaved threads, one memory every 5 minutes): memories/s
   acknowledged (the command's wall time, the CLI's start included) and seconds until the
   episode work it queued has settled (``/v1/health``; jobs that only wait for an LLM are
   left out, there is none).

With --before, every measurement is also run with the code of that checkout (its
``tribalmemory`` package first on PYTHONPATH), back to back with this one's, in alternating
order. Prints the tables and writes section "fresh-daemon" of docs/benchmarks.md (unless
--no-write). The machine's load average is printed beside every figure: on a shared machine
compare only figures measured together.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from latency import Daemon, fake_llm, start_daemon, thread_stream
from portability import memory_line, sentence, stamp
from report import write_section

from tribalmemory.embeddings.embedder import BUNDLED_DIM, BUNDLED_MODEL
from tribalmemory.portability import records

REPO = Path(__file__).resolve().parents[1]
LLM_EPISODES = {
    "enabled": True,
    "detector_strategy": "hybrid",
    "summarizer_provider": "openai",
    "summarizer_model": "gpt-4o-mini",
    "summary_debounce_seconds": 2.0,
    "merge_checks": True,
    "split_checks": True,
}
LLM_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")  # unset here: the default has no key
WAITING_FOR_LLM = ("classify_waiting", "merge_waiting", "split_waiting")


def load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def code_env(code: Path | None) -> dict[str, str]:
    """The environment that runs ``code``'s tribalmemory (None: this checkout's)."""
    root = str(code or REPO)
    return {"PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


@dataclass
class Samples:
    """Figures of one kind over the rounds, with the load average at each."""

    values: list[Any] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)

    def add(self, value: Any) -> None:
        self.values.append(value)
        self.loads.append(load())


# -- 1. cold start ---------------------------------------------------------------------------


def first_remembers(daemon: Daemon, count: int) -> list[float]:
    """``count`` remembers one at a time, from the first answered health check (ms)."""
    stream = thread_stream(1)
    out = []
    with httpx.Client(trust_env=False, timeout=120) as client:
        for _ in range(count):
            body = {"content": next(stream), "tags": ["bench"]}
            start = time.perf_counter()
            client.post(f"{daemon.url}/v1/remember", json=body).raise_for_status()
            out.append((time.perf_counter() - start) * 1000)
    return out


def cold_start(
    root: Path, llm_url: str, episodes_on: bool, count: int, code: Path | None
) -> tuple[float, list[float]]:
    """Seconds from spawn to ready, and the first ``count`` remembers' latencies (ms)."""
    env = {**code_env(code), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    if episodes_on:
        episodes: dict[str, Any] = {**LLM_EPISODES, "api_base": llm_url}
        env["OPENAI_API_KEY"] = "x"
    else:
        episodes = {"enabled": False}
    daemon = start_daemon(root, root.parent / "daemons.log", episodes, env=env)
    try:
        return daemon.ready_seconds, first_remembers(daemon, count)
    finally:
        daemon.stop()


def summary(samples: list[list[float]]) -> str:
    """p50 / p95 / max of each round, as ``a / b / c`` joined by ``;``."""
    return "; ".join(
        f"{np.percentile(s, 50):.0f} / {np.percentile(s, 95):.0f} / {max(s):.0f}" for s in samples
    )


# -- 2. import through the daemon ------------------------------------------------------------


def write_export(path: Path, count: int) -> None:
    """An export of ``count`` memories without vectors or episodes (as portability.py's)."""
    rng = random.Random(5)
    head = records.header(BUNDLED_MODEL, BUNDLED_DIM, stamp(0), None, False)
    with path.open("w", encoding="utf-8") as handle:
        handle.write(records.dumps(head))
        for i in range(count):
            topic, text = sentence(rng)
            handle.write(records.dumps(memory_line(rng, i, topic, text)))
        handle.write(records.dumps(records.end(count, 0)))


def settled(url: str, timeout: float) -> float | None:
    """Seconds until the daemon's queued episode work is done (None: not within timeout)."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        health = httpx.get(f"{url}/v1/health", trust_env=False, timeout=60).json()
        queue = health.get("episodes") or {}
        waiting = sum(int(queue.get(name) or 0) for name in WAITING_FOR_LLM)
        if int(queue.get("queue_depth") or 0) - waiting <= 0:
            return time.perf_counter() - start
        time.sleep(0.25)
    return None


def import_through_daemon(
    root: Path, export: Path, count: int, code: Path | None
) -> tuple[float, float | None]:
    """memories/s acknowledged by ``tribalmemory import`` through a fresh daemon in the
    default configuration, and the seconds its episode work took to settle afterwards."""
    env = {**code_env(code), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    daemon = start_daemon(root, root.parent / "daemons.log", {"enabled": True}, env=env)
    try:
        seconds = run_import(root, export, count, env)
        return count / seconds, settled(daemon.url, 600)
    finally:
        daemon.stop()


def run_import(root: Path, export: Path, count: int, env: dict[str, str]) -> float:
    """Seconds ``tribalmemory import EXPORT`` takes (the CLI, which finds the daemon serving
    ``root`` and streams the file to it); exits unless all ``count`` memories were stored."""
    environ = {**os.environ, **env, "TRIBAL_MEMORY_HOME": str(root), "HOME": str(root)}
    environ.pop("TRIBAL_MEMORY_TOKEN", None)
    command = [sys.executable, "-m", "tribalmemory", "import", str(export), "--json"]
    command += ["--config", str(root / "config.yaml")]
    start = time.perf_counter()
    done = subprocess.run(command, env=environ, cwd=root, capture_output=True, text=True)
    if done.returncode != 0 or f'"stored": {count}' not in done.stdout:
        raise SystemExit(f"the import failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.perf_counter() - start


# -- main ------------------------------------------------------------------------------------


def versions(before: Path | None) -> list[tuple[str, Path | None]]:
    return [("this code", None)] + ([("before", before)] if before else [])


def alternate(items: list[Any], index: int) -> list[Any]:
    """``items`` in order on even rounds, reversed on odd ones (back to back, fairly)."""
    return items if index % 2 == 0 else items[::-1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh daemons per figure")
    parser.add_argument("--remembers", type=int, default=200, help="first remembers timed")
    parser.add_argument("--count", type=int, default=10_000, help="memories in the export")
    parser.add_argument("--before", type=Path, help="a checkout of the code to compare with")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold start")
    parser.add_argument("--no-import", action="store_true", help="skip the import")
    parser.add_argument("--no-write", action="store_true", help="do not touch docs/benchmarks.md")
    args = parser.parse_args(argv)
    for name in LLM_KEYS:
        os.environ.pop(name, None)
    began, start_load = time.perf_counter(), load()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - began:6.0f} s] {message}", file=sys.stderr, flush=True)

    cold: dict[tuple[str, bool], Samples] = {}
    ready: dict[tuple[str, bool], Samples] = {}
    imports: dict[str, Samples] = {}
    settles: dict[str, Samples] = {}
    with tempfile.TemporaryDirectory(prefix="tm-fresh-") as tmp:
        root = Path(tmp)
        if not args.no_cold:
            with fake_llm(1.0, root / "daemons.log") as llm_url:
                runs = [(v, on) for v in versions(args.before) for on in (False, True)]
                for index in range(args.rounds):
                    for (name, code), on in alternate(runs, index):
                        home = root / f"cold-{index}-{name.replace(' ', '-')}-{on}"
                        seconds, latencies = cold_start(home, llm_url, on, args.remembers, code)
                        cold.setdefault((name, on), Samples()).add(latencies)
                        ready.setdefault((name, on), Samples()).add(seconds)
                        log(
                            f"cold start, {name}, episodes {'on' if on else 'off'}: "
                            f"{summary([latencies])} ms (ready {seconds:.1f} s, load "
                            f"{load():.1f})"
                        )
        if not args.no_import:
            export = root / "export.jsonl"
            write_export(export, args.count)
            for index in range(args.rounds):
                for name, code in alternate(versions(args.before), index):
                    home = root / f"import-{index}-{name.replace(' ', '-')}"
                    rate, after = import_through_daemon(home, export, args.count, code)
                    imports.setdefault(name, Samples()).add(rate)
                    settles.setdefault(name, Samples()).add(after)
                    log(f"import, {name}: {rate:.0f} memories/s, settled after {after} s")
    minutes = (time.perf_counter() - began) / 60
    text = report(args, cold, ready, imports, settles, start_load, minutes)
    print(text)
    if not args.no_write:
        write_section("fresh-daemon", text)


def loads(samples: Samples) -> str:
    return ", ".join(f"{x:.1f}" for x in samples.loads)


def report(
    args: argparse.Namespace,
    cold: dict[tuple[str, bool], Samples],
    ready: dict[tuple[str, bool], Samples],
    imports: dict[str, Samples],
    settles: dict[str, Samples],
    start_load: float,
    minutes: float,
) -> str:
    parts = ["## A fresh daemon: first remembers, and an import through it"]
    if cold:
        lines = [
            f"First {args.remembers} `remember` calls over HTTP of a fresh daemon, one at a "
            "time from its first answer, no warm-up; p50 / p95 / max (ms) of each round "
            "(fresh daemons each time):",
            "",
            "| code | episodes | p50 / p95 / max per round (ms) | ready after spawn (s) | "
            "load average at each round |",
            "|---|---|---|---|---|",
        ]
        for (name, on), samples in cold.items():
            seconds = ", ".join(f"{s:.1f}" for s in ready[(name, on)].values)
            lines.append(
                f"| {name} | {'on (hybrid, fake LLM)' if on else 'off'} | "
                f"{summary(samples.values)} | {seconds} | {loads(samples)} |"
            )
        parts.append("\n".join(lines))
    if imports:
        lines = [
            f"`tribalmemory import` of a {args.count:,}-memory export without vectors or "
            "episodes, through a fresh daemon in the default configuration (episodes on, no "
            "LLM key), as a user runs it (the command's wall time):",
            "",
            "| code | memories/s acknowledged, per round | episode work settled after (s) | "
            "load average at each round |",
            "|---|---|---|---|",
        ]
        for name, samples in imports.items():
            rates = ", ".join(f"{r:.0f}" for r in samples.values)
            after = ", ".join("> 600" if s is None else f"{s:.1f}" for s in settles[name].values)
            lines.append(f"| {name} | {rates} | {after} | {loads(samples)} |")
        parts.append("\n".join(lines))
    command = "python benchmarks/fresh_daemon.py"
    command += f" --rounds {args.rounds}" if args.rounds != 3 else ""
    command += f" --count {args.count}" if args.count != 10_000 else ""
    command += " --before <the code before>" if args.before else ""
    parts.append(
        f"Measured with `{command}`"
        + f" in {minutes:.0f} min on {os.cpu_count()} CPUs shared with other jobs (load "
        f"average {start_load:.1f} at the start): compare figures of the same run only."
    )
    return "\n\n".join(parts)


if __name__ == "__main__":
    main()
