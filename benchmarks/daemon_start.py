"""A daemon's start: seconds from the spawn to its first answer, and the CPU it took.

    python benchmarks/daemon_start.py [--rounds 5] [--before /path/to/older/checkout]
                                      [--no-write]

Each round spawns ``python -m tribalmemory serve`` on a new data folder in three
configurations: episodes off; episodes on without an LLM; episodes on with an LLM configured
(a key and an ``api_base`` nobody answers on: litellm is imported, no call succeeds). Ready is
the first 200 from ``/v1/health`` (polled every 5 ms by one client); the CPU is the daemon's
user + system time at that moment (``/proc/PID/stat``). With --before, the same with that
checkout's code (its ``tribalmemory`` package first on PYTHONPATH), back to back, alternating
which goes first. Prints the medians and ranges and writes section "daemon-start" of
docs/benchmarks.md (unless --no-write), with the load average before and after.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from fresh_daemon import code_env, load
from latency import cpu_seconds, spawn_daemon
from report import write_section

CONFIGS: dict[str, dict[str, Any]] = {
    "episodes off": {"enabled": False},
    "episodes on, no LLM": {"enabled": True},
    "episodes on, an LLM configured": {
        "enabled": True,
        "summarizer_provider": "openai",
        "summarizer_model": "gpt-4o-mini",
        "api_base": "http://127.0.0.1:9/v1",
    },
}


def start(episodes: dict[str, Any], env: dict[str, str]) -> tuple[float, float]:
    """Spawn a daemon on a new data folder: (seconds until it answers, its CPU seconds then)."""
    home = Path(tempfile.mkdtemp(prefix="tm-start-"))
    if "api_base" in episodes:
        env = {**env, "OPENAI_API_KEY": "sk-benchmark"}
    process, _url, ready = spawn_daemon(home, home / "daemon.log", episodes, env)
    try:
        return ready, cpu_seconds(process.pid)
    finally:
        process.terminate()
        process.wait(30)


def revision(checkout: Path) -> str:
    """The short commit id of ``checkout`` (its folder's name when it is not a git checkout)."""
    found = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return found.stdout.strip() or checkout.name


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", type=Path, help="an older checkout to compare with")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    codes: list[tuple[str, Path | None]] = [("this code", None)]
    if args.before:
        codes.append((f"before (`{revision(args.before)}`)", args.before))
    started = load()
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for round_ in range(args.rounds):
        for name, episodes in CONFIGS.items():
            order = codes if round_ % 2 == 0 else codes[::-1]
            for label, code in order:
                results.setdefault((name, label), []).append(start(episodes, code_env(code)))
        print(f"round {round_ + 1} of {args.rounds} (load {load():.2f})", flush=True)
    rows = [
        "| configuration | code | ready after spawn (s) | daemon CPU until then (s) |",
        "|---|---|---|---|",
    ]
    for (name, label), samples in results.items():
        ready, cpu = [s[0] for s in samples], [s[1] for s in samples]
        rows.append(f"| {name} | {label} | {spread(ready)} | {spread(cpu)} |")
    table = "\n".join(rows)
    print(table)
    if not args.no_write:
        command = "python benchmarks/daemon_start.py" + (
            f" --before {args.before}" if args.before else ""
        )
        write_section(
            "daemon-start",
            f"## A daemon's start\n\n`{command}` ({args.rounds} rounds; median (min–max); "
            f"load average {started:.2f} before, {load():.2f} after): seconds from the spawn "
            "of `tribalmemory serve` on a new data folder to its first answer, and the "
            "daemon's CPU time until then.\n\n" + table,
        )


if __name__ == "__main__":
    main()
