"""Latency and throughput of the embedded default: Qdrant Edge + the bundled MiniLM model.

    python benchmarks/latency.py [--sizes 10000,100000] [--rounds 5] [--no-write] [--quick]

1. In process, at each size: a store of generated, varied memories (real MiniLM embeddings;
   see --real), sealed chunk by chunk as the daemon's maintenance task would do it, then the
   memory service as the daemon runs it: ``remember`` (embedding + duplicate check + upsert,
   episodes off) and ``recall`` (query embedding included) p50/p95, the query embedding and
   the store search on their own, and how many of the exact float32 top-10 the store's dense
   search returns.
2. Real daemons (``python -m tribalmemory serve``, fresh data folder): time from spawning the
   process to the first answered request (``/v1/health``), empty and with the largest store
   from step 1; ``remember`` p50/p95 over HTTP with episodes off and on (hybrid detection
   with its reviews and merge checks, a fake OpenAI-compatible LLM from ``tests/fakellm.py``
   answering after --llm-delay seconds), both daemons running, measured in alternating blocks
   with the other one paused, --rounds times between fresh pairs of daemons (the on / off
   ratios' median and range), --sporadic-rounds more with one ``remember`` at a time, each
   after 0.3 s in which its daemon gets no request, --pace-rounds more at each of two other
   paces (back to back in blocks of 500; bursts of 50, each after 0.35 s alone), and
   --aa-rounds of the LLM configuration against itself (how far one comparison moves when
   nothing differs); the two daemons of every other comparison start in the other order;
   sustained ``remember`` throughput from --clients concurrent HTTP clients.

Prints the tables and writes section "latency" of docs/benchmarks.md (unless --no-write).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import yaml
from report import write_section

from tribalmemory.config import load_config
from tribalmemory.embeddings import BUNDLED_MODEL, load_embedder
from tribalmemory.models import Memory, SourceType, new_memory_id
from tribalmemory.storage import edge, open_store
from tribalmemory.timeutil import utc_now

REPO = Path(__file__).resolve().parents[1]
SEAL_SIZE = getattr(edge, "SEAL_SIZE", 10_000)

# -- generated memories ------------------------------------------------------------------------

AREAS = [
    "billing",
    "auth",
    "payments",
    "search",
    "notification",
    "inventory",
    "reporting",
    "analytics",
    "checkout",
    "shipping",
    "profile",
    "session",
    "export",
    "import",
    "audit",
    "email",
    "sms",
    "pricing",
    "catalog",
    "recommendation",
    "ledger",
    "invoice",
    "refund",
    "onboarding",
    "admin",
    "webhook",
    "scheduler",
    "upload",
    "media",
    "geo",
]
PARTS = [
    "service",
    "worker",
    "gateway",
    "API",
    "cron job",
    "database",
    "cache",
    "queue",
    "frontend",
    "pipeline",
    "client library",
    "migration",
]
PEOPLE = [
    "Alice",
    "Bob",
    "Priya",
    "Chen",
    "Fatima",
    "Lukas",
    "Sofia",
    "Kenji",
    "Amara",
    "Diego",
    "Olga",
    "Tom",
    "Mei",
    "Ravi",
    "Nora",
    "Jonas",
    "Leila",
    "Sam",
    "Ines",
    "Viktor",
]
ISSUES = [
    "times out under load",
    "leaks memory after each deploy",
    "returns stale results",
    "double-charges customers on retry",
    "drops messages when Redis restarts",
    "deadlocks during the nightly batch",
    "logs tokens in plain text",
    "fails health checks behind the new load balancer",
    "ignores the feature flag",
    "sends duplicate emails",
    "breaks on daylight saving time",
    "rejects valid UTF-8 names",
    "spikes CPU when the index is cold",
    "loses the last page of results",
    "races with the refresh-token rotation",
    "corrupts CSV exports with commas",
    "hangs on an expired TLS certificate",
    "retries forever on HTTP 429",
]
CAUSES = [
    "a missing index on created_at",
    "an unbounded in-memory cache",
    "a connection pool of only 5",
    "clock skew between two nodes",
    "an N+1 query in the ORM",
    "a stale DNS entry",
    "a race between two workers claiming one job",
    "the default timeout of the HTTP client",
    "a schema change applied out of order",
    "an off-by-one in the pagination cursor",
    "a retry without jitter",
    "a config value read before the reload",
    "a lock held across an await",
]
ACTIONS = [
    "moved to Postgres 16",
    "got a circuit breaker",
    "now batches writes by 500",
    "switched to idempotency keys",
    "runs on the new Kubernetes cluster",
    "caches lookups for 60 seconds",
    "uses structured logging",
    "was split into two jobs",
    "reads from the replica",
    "drops support for API v1",
    "pins the TLS version",
    "moved its secrets to Vault",
]
TOOLS = [
    "make test-{a}",
    "pytest -m {a} --runslow",
    "the {a} docker compose file",
    "tox -e {a}",
    "./scripts/{a}-smoke.sh",
    "the {a} Grafana dashboard",
]
SETTINGS = [
    ("timeout", "s"),
    ("pool size", "connections"),
    ("batch size", "rows"),
    ("retry limit", "attempts"),
    ("cache TTL", "minutes"),
    ("rate limit", "requests/s"),
]
PREFERENCES = [
    "squash merges",
    "small pull requests",
    "feature flags for risky changes",
    "tabs over spaces",
    "type hints everywhere",
    "integration tests over mocks",
    "ADRs for every design decision",
    "Friday code freezes",
]
TEMPLATES = [
    "The {c} {issue}; {p} traced it to {cause}.",
    "Decision ({t}): the {c} {action}, agreed with {p}.",
    "To run the {c} tests use {tool}; plain pytest misses its fixtures.",
    "{p} prefers {pref} when working on the {c}.",
    "The {c} deploy on {day} failed because of {cause}; rolled back at {h}:{m:02d}.",
    "Config: {c} {setting} is {v} {unit} in production and {v2} {unit} in staging.",
    "Incident {t}: the {c} {issue} for {n} minutes; root cause was {cause}.",
    "{p} owns the {c}; page them first for sev-{s} alerts.",
    "Follow-up for {t}: {p} will make sure the {c} {action} before the {day} release.",
    "Note from {p}: the {c} {issue} only when {cause2} happens at the same time.",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "March 3", "April 17", "June 9"]
QUERIES = [
    "how do I run the {c} tests",
    "why did the {c} deploy fail",
    "who owns the {c}",
    "what is the {setting} of the {c} in production",
    "root cause of the {c} incident",
    "{c} {issue}",
    "what did we decide about the {c}",
    "what does {p} prefer",
]


def component(rng: random.Random) -> tuple[str, str]:
    area = rng.choice(AREAS)
    return area, f"{area} {rng.choice(PARTS)}"


def sentence(
    rng: random.Random, area_part: tuple[str, str] | None = None, person: str | None = None
) -> str:
    area, comp = area_part or component(rng)
    setting, unit = rng.choice(SETTINGS)
    return rng.choice(TEMPLATES).format(
        c=comp,
        p=person or rng.choice(PEOPLE),
        issue=rng.choice(ISSUES),
        cause=rng.choice(CAUSES),
        cause2=rng.choice(CAUSES),
        action=rng.choice(ACTIONS),
        tool=rng.choice(TOOLS).format(a=area),
        pref=rng.choice(PREFERENCES),
        day=rng.choice(DAYS),
        h=rng.randint(0, 23),
        m=rng.randint(0, 59),
        setting=setting,
        unit=unit,
        v=rng.randint(1, 500),
        v2=rng.randint(1, 500),
        n=rng.randint(3, 240),
        s=rng.randint(1, 4),
        t=f"{area.upper()[:3]}-{rng.randint(100, 99999)}",
    )


def query(rng: random.Random) -> str:
    area, comp = component(rng)
    return rng.choice(QUERIES).format(
        c=comp, p=rng.choice(PEOPLE), issue=rng.choice(ISSUES), setting=rng.choice(SETTINGS)[0]
    )


def embed_corpus(
    size: int, real: int, cache: Path, log: Any
) -> tuple[list[str], np.ndarray, float | None]:
    """``size`` texts and unit vectors: the first ``real`` embedded by the bundled model
    (cached on disk), the rest mixtures of two real ones with their texts spliced."""
    rng = random.Random(7)
    real = min(real, size)
    texts = [sentence(rng) for _ in range(real)]
    path = cache / f"corpus-{real}.npy"
    rate = None
    if path.exists():
        vectors = np.load(path)
    else:
        log(f"embedding {real:,} generated memories (cached in {path}) ...")
        embedder = load_embedder(BUNDLED_MODEL)
        start = time.perf_counter()
        vectors = np.concatenate(
            [embedder.embed(texts[i : i + 1024]) for i in range(0, real, 1024)]
        )
        rate = real / (time.perf_counter() - start)
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    if size == real:
        return texts, vectors, rate
    mix = np.random.default_rng(11)
    first, second = mix.integers(0, real, size - real), mix.integers(0, real, size - real)
    weight = mix.uniform(0.6, 0.9, (size - real, 1)).astype(np.float32)
    extra = weight * vectors[first] + (1 - weight) * vectors[second]
    extra += mix.normal(0, 0.01, extra.shape).astype(np.float32)
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    spliced = []
    for a, b in zip(first, second, strict=True):
        left, right = texts[a].split(), texts[b].split()
        spliced.append(" ".join(left[: len(left) // 2] + right[len(right) // 2 :]))
    return texts + spliced, np.concatenate([vectors, extra]), rate


# -- measurement helpers -----------------------------------------------------------------------


def pct(samples: list[float], q: float) -> float:
    return float(np.percentile(samples, q)) if samples else float("nan")


def ms(samples: list[float]) -> str:
    return f"{pct(samples, 50):.1f} / {pct(samples, 95):.1f}"


def tail(samples: list[float]) -> str:
    """p99 / max: a stall of a few requests (a lock held through an LLM call) shows only here."""
    return f"{pct(samples, 99):.1f} / {max(samples, default=float('nan')):.1f}"


@dataclass
class Column:
    name: str
    values: dict[str, str] = field(default_factory=dict)


def table(columns: list[Column]) -> str:
    metrics: list[str] = []
    for column in columns:
        metrics += [m for m in column.values if m not in metrics]
    lines = [
        "| metric | " + " | ".join(c.name for c in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for metric in metrics:
        lines.append(
            f"| {metric} | " + " | ".join(c.values.get(metric, "–") for c in columns) + " |"
        )
    return "\n".join(lines)


def write_config(home: Path, **sections: Any) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.yaml"
    path.write_text(yaml.safe_dump({"data_dir": str(home), **sections}), encoding="utf-8")
    return path


# -- 1. in process -----------------------------------------------------------------------------


def build_store(
    home: Path, texts: list[str], vectors: np.ndarray, seal: bool = True
) -> dict[str, Any]:
    """Upsert the corpus; optimize() after every SEAL_SIZE memories, as maintenance would."""
    config = load_config(write_config(home, episodes={"enabled": False}))
    store = open_store(config, BUNDLED_MODEL, vectors.shape[1])
    now = utc_now()
    kinds = [SourceType.USER_EXPLICIT, SourceType.AUTO_CAPTURE]
    upsert_seconds, seals, ids = 0.0, [], []
    try:
        for lo in range(0, len(texts), SEAL_SIZE):
            hi = min(len(texts), lo + SEAL_SIZE)
            memories = [
                Memory(
                    id=new_memory_id(),
                    content=texts[i],
                    source_type=kinds[i % 2],
                    source_instance="bench",
                    tags=[texts[i].split()[1].lower()],
                    context=None,
                    created_at=now - timedelta(minutes=i),
                    updated_at=now,
                )
                for i in range(lo, hi)
            ]
            ids += [m.id for m in memories]
            start = time.perf_counter()
            for b in range(0, len(memories), 500):
                store.upsert(memories[b : b + 500], vectors[lo + b : lo + b + 500])
            upsert_seconds += time.perf_counter() - start
            start = time.perf_counter()
            if seal and store.optimize():
                seals.append(time.perf_counter() - start)
    finally:
        store.close()
    return {
        "upsert_rate": len(texts) / upsert_seconds,
        "seals": seals,
        "config": config,
        "ids": ids,
    }


async def measure_service(
    config: Any, runs: int, corpus_vectors: np.ndarray, ids: list[str]
) -> dict[str, Any]:
    from tribalmemory.runtime import start_runtime
    from tribalmemory.shapes import RecallRequest, RememberRequest

    runtime = await start_runtime(config)
    service = runtime.service
    rng = random.Random(99)
    out: dict[str, Any] = {}
    try:
        # quality: the store's dense top-10 against exact float32 search over the corpus
        queries = [query(rng) for _ in range(50)]
        qv = service.embedder.embed(queries)
        exact = np.argsort(-(corpus_vectors @ qv.T), axis=0)[:10].T
        overlap = []
        for row, want in zip(qv, exact, strict=True):
            got = {h.memory.id for h in service.store.dense_search(row, 10)}
            overlap.append(len(got & {ids[i] for i in want}) / 10)
        out["overlap"] = float(np.mean(overlap))
        for _ in range(10):  # warm-up
            await service.remember(RememberRequest(content=sentence(rng), skip_dedup=False))
            await service.recall(RecallRequest(query=query(rng)))
        remember, recall, embed, search = [], [], [], []
        for _ in range(runs):
            request = RememberRequest(content=sentence(rng), tags=["bench"])
            start = time.perf_counter()
            result = await service.remember(request)
            remember.append((time.perf_counter() - start) * 1000)
            assert result.success or result.duplicate_of, result
        for _ in range(runs):
            asked = RecallRequest(query=query(rng))
            start = time.perf_counter()
            await service.recall(asked)
            recall.append((time.perf_counter() - start) * 1000)
        for _ in range(runs):
            text = query(rng)
            start = time.perf_counter()
            vector = service.embedder.embed([text])[0]
            middle = time.perf_counter()
            service.store.search(text, vector, 5)
            embed.append((middle - start) * 1000)
            search.append((time.perf_counter() - middle) * 1000)
        out.update(remember=remember, recall=recall, embed=embed, search=search)
    finally:
        await runtime.stop()
    return out


def run_size(size: int, args: argparse.Namespace, root: Path, log: Any) -> tuple[Column, Path]:
    texts, vectors, rate = embed_corpus(size, args.real, Path(args.cache), log)
    home = root / f"store-{size}"
    log(f"{size:,}: building the store ...")
    built = build_store(home, texts, vectors, seal=not args.no_seal)
    log(f"{size:,}: measuring remember / recall ...")
    result = asyncio.run(measure_service(built["config"], args.runs, vectors, built["ids"]))
    column = Column(f"{size:,} memories")
    v = column.values
    if rate:
        v["batch embedding (texts/s)"] = f"{rate:,.0f}"
    v["bulk upsert (memories/s)"] = f"{built['upsert_rate']:,.0f}"
    seals = built["seals"]
    v["sealing: optimize() calls, mean / max (s)"] = (
        f"{len(seals)}, {np.mean(seals):.2f} / {max(seals):.2f}" if seals else "0"
    )
    v["**remember** p50 / p95 (ms)"] = ms(result["remember"])
    v["**recall** p50 / p95 (ms), query embedding included"] = ms(result["recall"])
    v["query embedding alone p50 / p95 (ms)"] = ms(result["embed"])
    v["store hybrid search alone p50 / p95 (ms)"] = ms(result["search"])
    v["dense top-10 found of the exact float32 top-10"] = f"{result['overlap']:.3f}"
    return column, home


# -- 2. daemons over HTTP ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Daemon:
    url: str
    process: subprocess.Popen[bytes]
    ready_seconds: float
    first_recall_ms: float

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def spawn_daemon(
    home: Path, log_path: Path, episodes: dict[str, Any], env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str, float]:
    """Spawn ``tribalmemory serve`` and wait for its first 200 from /v1/health (polled every
    5 ms): the process, its URL and the seconds from the spawn to that answer."""
    port = free_port()
    config = write_config(home, server={"port": port, "log_level": "warning"}, episodes=episodes)
    environ = {
        **os.environ,
        "TRIBAL_MEMORY_HOME": str(home),
        "HOME": str(home),
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    for name in ("TRIBAL_MEMORY_TOKEN", "TRIBAL_MEMORY_CONFIG"):
        environ.pop(name, None)
    url = f"http://127.0.0.1:{port}"
    start = time.perf_counter()
    with log_path.open("ab") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "tribalmemory", "serve", "--config", str(config)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=environ,
            cwd=home,
        )
    with httpx.Client(trust_env=False, timeout=2.0) as client:
        while True:
            if process.poll() is not None:
                raise SystemExit(f"the daemon exited with {process.returncode}; see {log_path}")
            try:
                if client.get(f"{url}/v1/health").status_code == 200:
                    return process, url, time.perf_counter() - start
            except httpx.HTTPError:
                pass
            if time.perf_counter() - start > 120:
                process.kill()
                raise SystemExit(f"the daemon was not ready within 120 s; see {log_path}")
            time.sleep(0.005)


def start_daemon(
    home: Path, log_path: Path, episodes: dict[str, Any], env: dict[str, str] | None = None
) -> Daemon:
    """Spawn ``tribalmemory serve``; ready = first 200 from /v1/health after the spawn."""
    process, url, ready = spawn_daemon(home, log_path, episodes, env)
    with httpx.Client(trust_env=False, timeout=2.0) as client:
        begin = time.perf_counter()
        client.post(
            f"{url}/v1/recall", json={"query": "how do I run the billing tests"}, timeout=60
        ).raise_for_status()
        first = (time.perf_counter() - begin) * 1000
    return Daemon(url, process, ready, first)


def wait_llm_ready(url: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    state = "?"
    while time.monotonic() < deadline:
        state = (
            httpx.get(f"{url}/v1/health", trust_env=False, timeout=10)
            .json()
            .get("llm", {})
            .get("state", "?")
        )
        if state in ("ready", "disabled"):
            return state
        time.sleep(0.2)
    return state


def thread_stream(seed: int) -> Any:
    """Memories of 12 interleaved threads of work (same component and person per thread)."""
    rng = random.Random(seed)
    threads = [(component(rng), rng.choice(PEOPLE)) for _ in range(12)]
    while True:
        comp, person = rng.choice(threads)
        yield sentence(rng, comp, person)


@contextmanager
def paused(daemon: Daemon) -> Iterator[None]:
    """Stop ``daemon`` (SIGSTOP) for the block, so that its background work cannot run then."""
    stop = getattr(signal, "SIGSTOP", None)  # POSIX only; elsewhere both keep running
    if stop is not None:
        os.kill(daemon.process.pid, stop)
    try:
        yield
    finally:
        if stop is not None:
            os.kill(daemon.process.pid, signal.SIGCONT)


def warm_up(client: httpx.Client, url: str, stream: Any, llm_url: str | None) -> None:
    """30 remembers; with an LLM, more until the fake LLM got a call during them (a daemon's
    first call imports the OpenAI client, a one-off; the other daemon is paused meanwhile)."""
    before = llm_stats(llm_url)["requests"] if llm_url else 0
    for _ in range(30):
        client.post(f"{url}/v1/remember", json={"content": next(stream)})
    deadline = time.monotonic() + 30
    while llm_url and llm_stats(llm_url)["requests"] == before and time.monotonic() < deadline:
        client.post(f"{url}/v1/remember", json={"content": next(stream)})
        time.sleep(0.2)
    if llm_url:
        time.sleep(1.5)  # let that first answer be processed


def interleaved_remember(
    off: Daemon,
    on: Daemon,
    llm_url: str | None,
    runs: int,
    block: int,
    gap: float = 0.0,
    both_llm: bool = False,
    cpu: dict[str, float] | None = None,
) -> tuple[list[float], list[float]]:
    """``runs`` remembers on each daemon, in alternating blocks of ``block`` (off, on, on,
    off, ...), the other daemon paused meanwhile; both get the same memories. ``both_llm``:
    the first daemon calls the LLM too (the comparison of a configuration with itself).

    Interleaving makes both sides share the machine's state (other jobs, CPU frequency);
    pausing keeps each daemon's work out of the other's block. LLM answers and due jobs of the
    episodes-on daemon pile up while it is paused and are handled in its own blocks. ``gap``:
    seconds each daemon is left alone after it is resumed, before its block's first request.
    ``cpu``: filled with each daemon's CPU seconds (all its threads) over the measured blocks.
    """
    samples: dict[str, list[float]] = {"off": [], "on": []}
    daemons = {"off": off, "on": on}
    streams = {"off": thread_stream(1), "on": thread_stream(1)}
    with httpx.Client(trust_env=False, timeout=60) as client:
        with paused(on):
            warm_up(client, off.url, streams["off"], llm_url if both_llm else None)
        with paused(off):
            warm_up(client, on.url, streams["on"], llm_url)
        before = {name: cpu_seconds(daemon.process.pid) for name, daemon in daemons.items()}
        for index in range(max(1, runs // block)):
            for name in ("off", "on") if index % 2 == 0 else ("on", "off"):
                other = daemons["on" if name == "off" else "off"]
                url = daemons[name].url
                with paused(other):
                    time.sleep(gap)
                    for _ in range(block):
                        body = {"content": next(streams[name]), "tags": ["bench"]}
                        start = time.perf_counter()
                        client.post(f"{url}/v1/remember", json=body).raise_for_status()
                        samples[name].append((time.perf_counter() - start) * 1000)
        if cpu is not None:
            for name, daemon in daemons.items():
                cpu[name] = cpu_seconds(daemon.process.pid) - before[name]
    return samples["off"], samples["on"]


def cpu_seconds(pid: int) -> float:
    """CPU seconds process ``pid`` has used, all its threads (Linux's /proc; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sequential_recall(url: str, runs: int) -> list[float]:
    rng = random.Random(5)
    out = []
    with httpx.Client(trust_env=False, timeout=60) as client:
        for _ in range(runs):
            body = {"query": query(rng)}
            start = time.perf_counter()
            client.post(f"{url}/v1/recall", json=body).raise_for_status()
            out.append((time.perf_counter() - start) * 1000)
    return out


async def concurrent_remember(
    url: str, stream: Any, clients: int, duration: float
) -> tuple[float, list[float], int]:
    """memories/s stored by ``clients`` concurrent clients for ``duration`` s, latencies, errors"""
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(trust_env=False, timeout=60, limits=limits) as client:
        deadline = time.perf_counter() + duration

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                body = {"content": next(stream), "skip_dedup": True}
                start = time.perf_counter()
                response = await client.post(f"{url}/v1/remember", json=body)
                if response.status_code == 200 and response.json().get("success"):
                    latencies.append((time.perf_counter() - start) * 1000)
                else:
                    errors += 1

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        elapsed = time.perf_counter() - start
    return len(latencies) / elapsed, latencies, errors


@contextmanager
def fake_llm(delay: float, log_path: Path) -> Iterator[str]:
    """The fake OpenAI-compatible LLM (tests/fakellm.py) answering after ``delay`` s: its base
    URL, for the block; stopped when the block ends, however it ends (a crashed run too)."""
    with log_path.open("ab") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.fakellm", "--delay", str(delay)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=sink,
        )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode().strip()
        if not line.startswith("READY "):
            raise SystemExit(f"the fake LLM did not start: {line!r}")
        yield line.split(" ", 1)[1]
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def queue_depth(url: str) -> int:
    """Episode jobs the daemon has queued, from /v1/health."""
    health = httpx.get(f"{url}/v1/health", trust_env=False, timeout=30).json()
    return int(health.get("episodes", {}).get("queue_depth") or 0)


def settle_time(url: str, timeout: float = 120.0) -> tuple[int, str]:
    """Episode jobs queued now, and seconds until /v1/health reports none (work settled)."""
    start, backlog = time.perf_counter(), queue_depth(url)
    while (queued := queue_depth(url)) and time.perf_counter() - start < timeout:
        time.sleep(0.25)
    elapsed = time.perf_counter() - start
    return backlog, f"{elapsed:.1f}" if not queued else f"> {timeout:.0f} ({queued} left)"


def llm_stats(base_url: str) -> dict[str, Any]:
    root = base_url.rsplit("/v1", 1)[0]
    return httpx.get(f"{root}/stats", trust_env=False, timeout=10).json()


def measure_throughput(url: str, args: argparse.Namespace, column: Column) -> None:
    """Sustained remember rate and latency from ``args.clients`` concurrent clients."""
    rate, lat, errors = asyncio.run(
        concurrent_remember(url, thread_stream(2), args.clients, args.duration)
    )
    column.values[f"remember throughput, {args.clients} clients (memories/s)"] = (
        f"{rate:.0f} (errors {errors})"
    )
    column.values[f"latency under {args.clients} clients p50 / p95 (ms)"] = ms(lat)


def block_starts(samples: list[float], block: int) -> str:
    """Mean of each block's first remember (the daemon was paused just before: its background
    work that fell due meanwhile starts then) against the mean of the others, in ms."""
    first = [s for index, s in enumerate(samples) if index % block == 0]
    rest = [s for index, s in enumerate(samples) if index % block]
    return f"{np.mean(first):.1f} / {np.mean(rest):.1f}" if first and rest else "–"


def ratios(off: list[float], on: list[float]) -> tuple[float, float]:
    """Episodes on / off at p50 and p95."""
    return pct(on, 50) / pct(off, 50), pct(on, 95) / pct(off, 95)


DEFAULT_EPISODES: dict[str, Any] = {"enabled": True}
"""The episodes of the default configuration: on, no API key (embedding detection, extractive
summaries, no LLM call)."""


def start_pair(
    root: Path,
    daemon_log: Path,
    episodes: dict[str, Any],
    started: list[Daemon],
    llm: bool = True,
    same: bool = False,
    on_first: bool = False,
) -> tuple[Daemon, Daemon, str]:
    """Fresh daemons, episodes off and on (appended to ``started`` for the caller to stop),
    and the LLM state of the second once it is ready (``llm``: with an API key; without one
    its state is not waited for). ``same``: the first daemon is the second's twin (A/A).
    ``on_first``: the episodes-on daemon is started first (callers alternate: the daemon
    started second ran a few per cent faster in comparisons of a configuration with itself)."""
    env = {"OPENAI_API_KEY": "x" if llm else "", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    if same:
        base = ("http-twin", episodes, env)
    else:
        base = ("http-off", {"enabled": False}, None)
    for name, config, variables in [base, ("http-on", episodes, env)][:: -1 if on_first else 1]:
        started.append(start_daemon(root / name, daemon_log, config, env=variables))
    first, second = started[-2:]
    off, on = (second, first) if on_first else (first, second)
    if same and llm:
        wait_llm_ready(off.url)
    return off, on, wait_llm_ready(on.url) if llm else "none"


@dataclass(frozen=True)
class Pace:
    """How the comparison's remembers are sent: ``runs`` a daemon, in blocks of ``block``, each
    block after ``gap`` seconds alone."""

    runs: int
    block: int
    gap: float

    def describe(self) -> str:
        """The pace in words, as its row of the table names it."""
        if self.block == 1:
            return f"one at a time ({self.gap:g} s apart)"
        if self.gap == 0:
            return f"without pause (blocks of {self.block})"
        return f"bursts of {self.block}, each after {self.gap:g} s alone"


SPORADIC = Pace(runs=300, block=1, gap=0.3)
"""One remember at a time, each after 0.3 s alone: an agent's writes between its steps."""

SUSTAINED = Pace(runs=1500, block=500, gap=0.0)
"""Back to back, each daemon resumed only every 500: a client writing without pause. In blocks
of 50, a resumed daemon's clock has run on while it was paused, so the work that fell due
meanwhile starts beside its block's first requests, in what looks like a quiet moment to it;
here that happens three times instead of thirty."""

AFTER_PAUSE = Pace(runs=1500, block=50, gap=0.35)
"""Bursts of 50, each after 0.35 s alone: a client writing in bursts, the background work
running in the pauses and still running when a burst begins."""

PACES = (SPORADIC, SUSTAINED, AFTER_PAUSE)
"""The paces compared besides the bursts of ``--block``."""


def median_ratios(rounds: list[tuple[float, float]]) -> str:
    """Rounds' p50 and p95 ratios: "median× (min–max) / median× (min–max)"."""
    r50, r95 = ([r[i] for r in rounds] for i in (0, 1))
    return (
        f"{np.median(r50):.3f}× ({min(r50):.2f}–{max(r50):.2f}) / "
        f"{np.median(r95):.3f}× ({min(r95):.2f}–{max(r95):.2f})"
    )


def extra_round(
    root: Path,
    daemon_log: Path,
    episodes: dict[str, Any],
    llm_url: str | None,
    args: argparse.Namespace,
    pace: Pace | None = None,
    same: bool = False,
    on_first: bool = False,
) -> tuple[float, float]:
    """One more on/off comparison between two fresh daemons (the same experiment again):
    its p50 and p95 ratios. ``llm_url`` None: the episodes-on daemon has no API key; ``pace``
    None: the bursts of ``args``; ``same``: the episodes-on daemon against its twin (A/A);
    ``on_first``: see :func:`start_pair`."""
    pace = pace or Pace(args.http_runs, args.block, args.gap)
    pair: list[Daemon] = []
    try:
        llm = llm_url is not None
        off, on, _ = start_pair(
            root, daemon_log, episodes, pair, llm=llm, same=same, on_first=on_first
        )
        samples = interleaved_remember(
            off, on, llm_url, pace.runs, pace.block, pace.gap, both_llm=same and llm
        )
    finally:
        for daemon in pair:
            daemon.stop()
    return ratios(*samples)


def run_http(
    args: argparse.Namespace, root: Path, big_store: Path | None, log: Any
) -> tuple[Column, Column, list[str]]:
    daemon_log = root / "daemons.log"
    off = Column("episodes off")
    on = Column("episodes on (hybrid + merge and split checks, fake LLM)")
    notes: list[str] = []

    log("daemon start-up ...")
    ready, first = [], []
    for index in range(args.starts):  # the default configuration: episodes on, no LLM key
        daemon = start_daemon(
            root / f"start-{index}", daemon_log, {"enabled": True}, env={"OPENAI_API_KEY": ""}
        )
        ready.append(daemon.ready_seconds)
        first.append(daemon.first_recall_ms)
        daemon.stop()
    off.values["daemon ready: spawn → first answered request, empty store (s)"] = (
        f"{np.median(ready):.2f} (median of {len(ready)}; max {max(ready):.2f})"
    )
    off.values["first recall after ready (ms)"] = f"{np.median(first):.0f}"
    if big_store is not None:
        daemon = start_daemon(big_store, daemon_log, {"enabled": True}, env={"OPENAI_API_KEY": ""})
        off.values[f"daemon ready with the {args.largest:,}-memory store (s)"] = (
            f"{daemon.ready_seconds:.2f}"
        )
        daemon.stop()

    log(f"HTTP, episodes off and on (fake LLM, {args.llm_delay:g} s per call), interleaved ...")
    with fake_llm(args.llm_delay, daemon_log) as base_url:
        notes += compare_http(args, root, daemon_log, base_url, log, off, on)
    return off, on, notes


def compare_http(
    args: argparse.Namespace,
    root: Path,
    daemon_log: Path,
    base_url: str,
    log: Any,
    off: Column,
    on: Column,
) -> list[str]:
    """The episodes on / off comparison over HTTP against the fake LLM at ``base_url``
    (fills ``off`` and ``on``; returns the notes)."""
    notes: list[str] = []
    episodes = {
        "enabled": True,
        "detector_strategy": "hybrid",
        "api_base": base_url,
        "summarizer_provider": "openai",
        "summarizer_model": "gpt-4o-mini",
        "summary_debounce_seconds": 2.0,
        "merge_checks": True,  # consolidation running: reviews, merge and split checks
        "split_checks": True,
    }

    def repeat(
        count: int, what: str, folder: str, config: dict[str, Any], llm_url: str | None, **kw: Any
    ) -> list[tuple[float, float]]:
        """``count`` comparisons (:func:`extra_round`), the daemons of every other one started
        in the other order, each logged."""
        out: list[tuple[float, float]] = []
        for index in range(count):
            log(f"HTTP comparison, {what}, round {index + 1} of {count} ...")
            home = root / f"{folder}-{index}"
            out.append(
                extra_round(home, daemon_log, config, llm_url, args, on_first=index % 2 == 1, **kw)
            )
            log("ratios p50 {:.3f}x, p95 {:.3f}x".format(*out[-1]))
        return out

    default = repeat(
        args.default_rounds, "default configuration", "default", DEFAULT_EPISODES, None
    )
    if default:
        label = f"remember on / off, default configuration (no LLM), median of {len(default)}"
        on.values[f"{label} rounds (range)"] = median_ratios(default)
    twins = repeat(
        args.aa_rounds,
        "the LLM configuration against itself",
        "twins",
        episodes,
        base_url,
        same=True,
    )
    if twins:
        label = f"the LLM configuration against itself (A/A), median of {len(twins)} rounds"
        on.values[f"{label} (range)"] = median_ratios(twins)
    paced: dict[Pace, list[tuple[float, float]]] = {}
    for number, pace in enumerate(PACES):
        count = args.sporadic_rounds if pace is SPORADIC else args.pace_rounds
        paced[pace] = repeat(
            count, pace.describe(), f"pace-{number}", episodes, base_url, pace=pace
        )
        if count:
            label = f"remember on / off, {pace.describe()}"
            label += f", median of {count} rounds (range)" if count > 1 else ""
            on.values[label] = median_ratios(paced[pace])
    sporadic = paced[SPORADIC]
    # the last of the ``args.rounds`` comparisons, below, also fills the other rows
    rounds = repeat(args.rounds - 1, "on / off", "round", episodes, base_url)
    daemons: list[Daemon] = []
    try:
        daemon_off, daemon_on, state = start_pair(  # the order of every other one, as above
            root, daemon_log, episodes, daemons, on_first=(args.rounds - 1) % 2 == 1
        )
        cpu: dict[str, float] = {}
        remember_off, remember_on = interleaved_remember(
            daemon_off, daemon_on, base_url, args.http_runs, args.block, args.gap, cpu=cpu
        )
        after = llm_stats(base_url)
        off.values["**remember** over HTTP p50 / p95 (ms)"] = ms(remember_off)
        on.values["**remember** over HTTP p50 / p95 (ms)"] = ms(remember_on)
        off.values["remember over HTTP p99 / max (ms)"] = tail(remember_off)
        on.values["remember over HTTP p99 / max (ms)"] = tail(remember_on)
        label = "daemon CPU per remember, all its threads, background work included (ms)"
        off.values[label] = f"{cpu['off'] / len(remember_off) * 1000:.1f}"
        on.values[label] = f"{cpu['on'] / len(remember_on) * 1000:.1f}"
        label = "remember over HTTP, mean of a block's first / of the others (ms)"
        off.values[label] = block_starts(remember_off, args.block)
        on.values[label] = block_starts(remember_on, args.block)
        rounds.append(ratios(remember_off, remember_on))
        log("on / off p50 {:.3f}x, p95 {:.3f}x".format(*rounds[-1]))
        label = "remember on / off, p50 and p95"
        if len(rounds) > 1:
            on.values[f"{label}, median of {len(rounds)} rounds (range)"] = median_ratios(rounds)
        else:
            on.values[label] = "{:.2f}× / {:.2f}×".format(*rounds[0])
        on.values["LLM calls answered by then (since start)"] = (
            f"{after['requests']} (LLM state {state}: "
            + ", ".join(f"{k} {n}" for k, n in sorted(after["by_purpose"].items()))
            + ")"
        )
        with paused(daemon_off):
            backlog, settled = settle_time(daemon_on.url)
        on.values["episode jobs queued after the last remember → settled after (s)"] = (
            f"{backlog} → {settled}"
        )
        for column, daemon, other in ((off, daemon_off, daemon_on), (on, daemon_on, daemon_off)):
            with paused(other):
                column.values["recall over HTTP p50 / p95 (ms)"] = ms(
                    sequential_recall(daemon.url, args.runs)
                )
                measure_throughput(daemon.url, args, column)
        queue = queue_depth(daemon_on.url)
        notes.append(
            f"`remember`: {args.http_runs} requests per daemon after 30 warm-up ones (and, "
            "episodes on, after the fake LLM's first answer), sent one at a time in alternating "
            f"blocks of {args.block} (off, on, on, off, …) with the other daemon paused "
            "(SIGSTOP), so that both see the same machine and neither's background work runs "
            "in the other's block; LLM answers and jobs that fall due while the episodes-on "
            "daemon is paused are handled in its blocks"
            + (f", after {args.gap:g} s left alone once resumed" if args.gap > 0 else "")
            + ". Episodes on: the fake LLM answers "
            f"after {args.llm_delay:g} s; summaries debounced 2 s instead of the default 30 s "
            "so that LLM work overlaps the measurement. Under this sustained load background "
            "work gets one CPU turn per second (docs/episodes.md), so jobs pile up and are "
            f"done once the load stops; {queue} episode jobs were queued at the very end. "
            "A block's first `remember` comes right after its daemon was resumed: the "
            "episodes-on daemon's work that fell due while it was paused starts then, in what "
            "looks like a quiet moment to it."
            + (
                f" The on / off ratios are the median of {len(rounds)} such comparisons, each "
                "between two fresh daemons, started episodes-off first in odd comparisons and "
                "episodes-on first in even ones (one comparison's p95 ratio moves by about ±0.1, "
                "now and then by 0.2; compared with itself, the daemon started second ran a few "
                "per cent faster); "
                "the other rows are the last comparison's."
                if len(rounds) > 1
                else ""
            )
            + (
                f" The default configuration's row (episodes on with no API key: embedding "
                f"detection, extractive summaries, no LLM call) is the median of {len(default)} "
                "comparisons of its own, run first, between fresh daemons, the same way."
                if default
                else ""
            )
            + (
                f" The row *against itself (A/A)* is {len(twins)} comparison(s) made the same "
                "way between two fresh daemons of the LLM configuration, the second's times "
                "over the first's: what one comparison's ratios move by when nothing differs "
                "between the daemons."
                if twins
                else ""
            )
            + (
                f" The row *one at a time* is {len(sporadic)} comparison(s) of the LLM "
                f"configuration with {SPORADIC.runs} `remember` a daemon sent alone, each after "
                f"{SPORADIC.gap:g} s in which its daemon gets no request (the other one paused), "
                "as an agent writes between its steps; the background work runs in those "
                "moments, not beside the requests."
                if sporadic
                else ""
            )
            + (
                f" The rows *without pause* and *bursts of {AFTER_PAUSE.block}* are "
                f"comparisons of the LLM configuration ({args.pace_rounds} each) at other "
                f"paces: back to back in blocks of {SUSTAINED.block} (each daemon resumed three "
                "times instead of thirty, so the work that falls due while it is paused meets "
                f"few requests), and in blocks of {AFTER_PAUSE.block} each after "
                f"{AFTER_PAUSE.gap:g} s in which the daemon gets no request (its background "
                "work runs then, and is still running when the burst begins)."
                if args.pace_rounds
                else ""
            )
        )
    finally:
        for daemon in daemons:
            daemon.stop()
    return notes


# -- main --------------------------------------------------------------------------------------


def environment() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.system()}; "
        f"qdrant-edge-py {version('qdrant-edge-py')}, fastembed {version('fastembed')}, "
        f"onnxruntime {version('onnxruntime')}; load average {load:.2f}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="store sizes (memories)")
    parser.add_argument("--runs", type=int, default=200, help="requests per latency figure")
    parser.add_argument(
        "--http-runs",
        type=int,
        default=1500,
        help="remembers per daemon for the episodes on/off comparison",
    )
    parser.add_argument(
        "--block",
        type=int,
        default=50,
        help="remembers per block in the interleaved on/off comparison",
    )
    parser.add_argument(
        "--gap",
        type=float,
        default=0.0,
        help="seconds a resumed daemon is left alone before its block's first request (0: "
        "the block starts at once, and the work that fell due while it was paused starts "
        "beside its first requests); docs/benchmarks.md shows how the ratios move with it",
    )
    parser.add_argument(
        "--real",
        type=int,
        default=10000,
        help="memories embedded for real; the rest mix two real embeddings",
    )
    parser.add_argument(
        "--cache",
        default=str(Path(tempfile.gettempdir()) / "tm-latency"),
        help="folder caching the embedded corpus between runs",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=9,
        help="on/off comparisons, each between two fresh daemons (one run's p95 ratio moves "
        "by about ±0.1, now and then by 0.2): the ratios' median and range are reported",
    )
    parser.add_argument(
        "--default-rounds",
        type=int,
        default=3,
        help="on/off comparisons with the default configuration (episodes on, no API key)",
    )
    parser.add_argument(
        "--sporadic-rounds",
        type=int,
        default=3,  # one round moved from 1.06x to 1.27x between runs of the same code
        help=f"on/off comparisons (LLM configuration) with {SPORADIC.runs} remembers a daemon "
        f"sent one at a time, each after {SPORADIC.gap:g} s alone",
    )
    parser.add_argument(
        "--pace-rounds",
        type=int,
        default=3,
        help=f"on/off comparisons (LLM configuration) back to back in blocks of "
        f"{SUSTAINED.block}, and as many in blocks of {AFTER_PAUSE.block} each after "
        f"{AFTER_PAUSE.gap:g} s alone",
    )
    parser.add_argument(
        "--aa-rounds",
        type=int,
        default=3,
        help="comparisons of the LLM configuration with itself (two episodes-on daemons): "
        "how far one comparison's ratios move when nothing differs",
    )
    parser.add_argument("--clients", type=int, default=8, help="concurrent HTTP clients")
    parser.add_argument(
        "--duration", type=float, default=20.0, help="seconds of the throughput run"
    )
    parser.add_argument("--starts", type=int, default=3, help="daemon start-ups to time")
    parser.add_argument(
        "--llm-delay", type=float, default=1.0, help="seconds the fake LLM takes per answer"
    )
    parser.add_argument("--no-http", action="store_true", help="skip the daemon measurements")
    parser.add_argument(
        "--no-seal",
        action="store_true",
        help="never call optimize() while building (versions without sealing)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small run: --sizes 2000 --runs 50 --duration 5 --starts 1",
    )
    parser.add_argument("--no-write", action="store_true", help="do not touch docs/benchmarks.md")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.runs, args.duration, args.starts = "2000", 50, 5.0, 1
        args.http_runs, args.rounds, args.default_rounds, args.sporadic_rounds = 100, 1, 1, 0
        args.pace_rounds = args.aa_rounds = 0
        args.real = min(args.real, 2000)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    args.largest = max(sizes) if sizes else 0
    began = time.perf_counter()
    env_start = environment()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - began:6.1f} s] {message}", file=sys.stderr, flush=True)

    log(env_start)
    root = Path(tempfile.mkdtemp(prefix="tm-latency-"))
    try:
        columns, big_store = [], None
        for size in sizes:
            column, home = run_size(size, args, root, log)
            columns.append(column)
            if size == args.largest:
                big_store = home
        http_tables = ""
        notes: list[str] = []
        if not args.no_http:
            off, on, notes = run_http(args, root, big_store, log)
            http_tables = table([off, on])
        env_end = environment()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    elapsed = time.perf_counter() - began
    text = "\n\n".join(
        part
        for part in [
            "## Latency (embedded default: Qdrant Edge + bundled MiniLM)",
            "In process, through the memory service as the daemon runs it (episodes off; "
            "`remember` includes embedding, the duplicate check and the upsert):",
            table(columns),
            (
                f"Stores are built from generated memories: {min(args.real, args.largest):,} "
                "embedded with the bundled model, the rest (if any) mixtures of two of those "
                "embeddings with their texts spliced. They are sealed every "
                f"{SEAL_SIZE:,} memories with `optimize()`, as the daemon's maintenance task "
                "does at quiet moments; each call holds the GIL for the time shown "
                "(see docs/storage.md)."
            ),
            "Real daemons (`python -m tribalmemory serve`, fresh data folders), over HTTP:"
            if http_tables
            else "",
            http_tables,
            "\n".join(f"- {note}" for note in notes),
            (
                f"Measured with `python benchmarks/latency.py --sizes {args.sizes}` in "
                f"{elapsed / 60:.1f} min: {env_start}; at the end {env_end.rsplit('; ', 1)[1]}. "
                "The 2-CPU machine was shared with other jobs: compare runs only with their load."
            ),
        ]
        if part
    )
    print(text)
    if not args.no_write:
        write_section("latency", text)


if __name__ == "__main__":
    main()
