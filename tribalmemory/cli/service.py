"""The daemon's life: ``serve``, ``service start|stop|logs``, and ``reembed`` (daemon stopped)."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from ..client import WrongDaemon, daemon_url, ensure_daemon, find_daemon
from ..config import Config
from ..datafolder import ensure_identity, make_private, write_private
from ..entities import warm_up as warm_up_entities
from ..interfaces.auth import check_bind, token_store
from ..llm.client import OFFLINE, load_litellm, needs_litellm
from ..logs import follow, log_file, setup_logging, tail
from ..plural import counted
from ..runtime import Runtime, start_runtime
from .output import CliError, clean

log = logging.getLogger("tribalmemory.serve")

STOP_TIMEOUT = 20.0


def pid_file(config: Config) -> Path:
    return config.data_path / "daemon.pid"


def bind(host: str, port: int) -> socket.socket:
    """Claim the port before loading anything (clients see 'refused' until the app serves)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        raise CliError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}. Is another "
            "daemon running there? (`tribalmemory status`)",
            2,
        ) from None
    return sock


GIL_SWITCH_SECONDS = 0.001
"""How long a thread may hold the GIL while another waits for it (Python's default is 5 ms).
A request's embedding and store calls run in threads; while one waits, the event loop runs
background work (the episode engine's jobs), and each of its steps could keep the finished
thread from returning for up to the switch interval. Measured, 1,500 remembers one at a time,
episodes on, mean p95 of three runs: in process 14.6 -> 12.9 ms, over HTTP 17.8 -> 16.5 ms."""


BLAS_THREADS = 1
"""Threads numpy's BLAS may use in the daemon. The episode detector multiplies small matrices
on the event loop (a memory against up to a thousand seeds' vectors); with OpenBLAS's default
of one thread per core, its threads spin on every core for a while after each product, right
when the next request's embedding needs them. Measured, episodes on, 2,900-3,400 remembers one
at a time: the request's embedding p95 9-10 -> 5.7 ms, remember p95 over HTTP 13-16 -> 10 ms."""


def limit_blas_threads() -> None:
    """Keep numpy's BLAS on :data:`BLAS_THREADS` thread(s) in this process. numpy is imported
    first: threadpoolctl limits only the libraries already loaded."""
    import numpy  # noqa: F401
    from threadpoolctl import threadpool_limits

    threadpool_limits(BLAS_THREADS, user_api="blas")


async def freeze_start_up_heap(config: Config) -> None:
    """Move the objects start-up built (modules, the model, litellm's tables) out of the
    garbage collector's reach (``gc.freeze``), litellm imported first when an LLM is configured
    and not known to lack its API key (then nothing imports it: ``needs_litellm``).

    litellm brings some 260,000 objects that live as long as the daemon; every full collection
    walked them all, and held the GIL for ~200 ms at an unpredictable moment, stalling the
    request then running. Frozen, they are never walked again (nor freed, should start-up's
    objects be dropped later; a full collection at that point, in a process that had loaded
    the same, found nothing to free). The import runs on a thread, as the LLM check that needs
    it does (whichever comes first imports, once)."""
    if needs_litellm(config.episodes):
        try:
            await asyncio.to_thread(load_litellm)
        except Exception as exc:  # the LLM check meets it too, and reports it (health)
            log.info("litellm could not be imported before freezing the heap: %s", exc)
    gc.freeze()


WARM_UP_TEXT = "warm-up"


def import_litellm_early(config: Config) -> asyncio.Task[Any] | None:
    """litellm's import on a thread, started before the runtime so that the two overlap
    (when an LLM is configured and not known to lack its key; else None)."""
    if not needs_litellm(config.episodes):
        return None
    return asyncio.create_task(asyncio.to_thread(load_litellm))


async def warm_up(
    config: Config, runtime: Runtime, litellm: Awaitable[Any] | None = None
) -> dict[str, Any]:
    """Load, before the daemon answers its first request, what its first requests would
    otherwise wait for: the request model's first run, the background embedder's model
    (episodes on: the first summaries need it) and litellm (an LLM configured with its key);
    then freeze the start-up heap (:func:`freeze_start_up_heap`). With episodes on, the entity
    extraction's first run too (its word list and model, ~60 ms: the entity work's first step,
    in the middle of a stream of requests, held one for 60-240 ms).

    Done lazily, these loads ran beside a fresh daemon's first requests: litellm's import holds
    the GIL for seconds and the background model loaded on its low-priority thread, and the
    first 100-200 remembers with episodes on took 250-760 ms at p95 (docs/benchmarks.md).
    A step that fails is logged at WARNING and shown in ``/v1/health`` (``warm_up``); what it
    loads is loaded again on first use. ``litellm``: its import, started already
    (:func:`import_litellm_early`; None when nothing needs it). Returns that health field."""
    started = time.monotonic()
    service = runtime.service
    steps: dict[str, Awaitable[Any]] = {"request model": service.embed([WARM_UP_TEXT])}
    if runtime.episodes is not None and service.background is not None:
        steps["background model"] = asyncio.to_thread(service.background.warm_up)
    if runtime.episodes is not None:
        steps["entity extraction"] = asyncio.to_thread(warm_up_entities)
    if litellm is not None:
        steps["litellm"] = litellm
    outcomes = await asyncio.gather(*steps.values(), return_exceptions=True)
    done, failed = [], {}
    for name, outcome in zip(steps, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            failed[name] = f"{type(outcome).__name__}: {outcome}"
            log.warning("warming up the %s failed (%s); it loads on first use", name, outcome)
        else:
            done.append(name)
    await freeze_start_up_heap(config)
    report = {"seconds": round(time.monotonic() - started, 2), "done": done, "failed": failed}
    service.warm_up = report
    return report


def serve(args: argparse.Namespace, config: Config) -> int:
    """``tribalmemory serve``: the daemon in the foreground."""
    sys.setswitchinterval(GIL_SWITCH_SECONDS)
    limit_blas_threads()
    server = config.server
    server.host = args.host or server.host
    server.port = args.port or server.port
    server.log_level = args.log_level or server.log_level
    make_private(config.data_path)
    setup_logging(server.log_level, log_file(config), stderr=not args.background)
    for note in config.deprecations:
        log.warning("%s", note)
    identity = ensure_identity(config.data_path)
    tokens = token_store(config)
    check_bind(server.host, tokens)
    if not tokens.active:
        log.warning(
            "no API token: serving %s without authentication (loopback only); "
            "`tribalmemory token generate` makes every client need one",
            server.host,
        )
    sock = bind(server.host, server.port)
    log.info(
        "starting Tribal Memory on %s (data in %s, data-folder id %s)",
        daemon_url(config),
        config.data_path,
        identity.id,
    )
    try:
        asyncio.run(_serve(config, sock))
    finally:
        sock.close()
    return 0


async def _serve(config: Config, sock: socket.socket) -> None:
    import uvicorn

    from ..interfaces.http import create_app

    started = time.monotonic()
    litellm = import_litellm_early(config)
    try:
        runtime = await start_runtime(config)
    except BaseException:
        if litellm is not None:
            await asyncio.wait({litellm})  # a thread: it ends with the import
        raise
    try:
        warmed = await warm_up(config, runtime, litellm)
    except BaseException:
        await runtime.stop()
        raise
    # the loop's steps run where the requests' embeddings and store calls do (placement.py;
    # warm_up ran one: the CPUs are known)
    runtime.service.request_threads.place_caller()
    announcing = asyncio.create_task(announce_llm(runtime))
    pid_path = pid_file(config)
    write_private(pid_path, f"{os.getpid()}\n")
    # uvicorn re-raises the signal that stopped it once it has shut down; the runtime must
    # still be stopped cleanly below, so make that re-raise a no-op.
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: None)
    try:
        app = create_app(config, runtime)
        level = config.server.log_level
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                log_config=None,
                log_level=level,
                access_log=level == "debug",
                server_header=False,
                timeout_graceful_shutdown=10,
            )
        )
        runtime.stop_requested = lambda: server.should_exit  # long imports end cleanly
        log.info(
            "runtime ready in %.2f s (warmed up in %.2f s: %s)",
            time.monotonic() - started,
            warmed["seconds"],
            ", ".join(warmed["done"]) or "nothing",
        )
        await server.serve(sockets=[sock])
    finally:
        announcing.cancel()
        await runtime.stop()
        if pid_path.read_text(encoding="utf-8").strip() == str(os.getpid()):
            pid_path.unlink()
        log.info("stopped")


async def announce_llm(runtime: Runtime) -> None:
    """Say once, at WARNING, that the daemon runs offline (no API key configured), with the
    reason and what episodes do instead. Local commands say it at INFO only; the state stays
    in ``/v1/health`` and ``tribalmemory status``."""
    if runtime.episodes is None:
        return
    llm = await runtime.episodes.llm_state()
    if llm["state"] == OFFLINE:
        log.warning("LLM offline: %s; %s", llm["reason"], llm.get("fallback", ""))


def start(args: argparse.Namespace, config: Config) -> int:
    """``service start``: make sure a daemon runs (in the background)."""
    client = ensure_daemon(config, args.config)
    print(f"daemon running at {client.base_url} (logs: {log_file(config)})")
    return 0


def _is_daemon(pid: int) -> bool:
    """The process exists and is a Tribal Memory daemon (not a re-used pid)."""
    try:
        os.kill(pid, 0)
        command = subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, timeout=5
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "tribalmemory" in command and "serve" in command


def running_pid(config: Config) -> int | None:
    """The pid of this data folder's daemon, from its pid file, if that process still runs."""
    try:
        pid = int(pid_file(config).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    return pid if pid > 0 and _is_daemon(pid) else None


def refuse_running_daemon(config: Config, config_path: str | None, then: str) -> None:
    """CliError (exit 2, the code for a store another process holds) when this data folder's
    daemon runs: it answers on the configured port, or its pid file shows it alive (started
    with another ``--port``, starting, stuck). ``then``: what to do once it is stopped."""
    try:
        ours = find_daemon(config, config_path=config_path)
    except WrongDaemon:  # another folder's daemon holds the port, not our store
        ours = None
    stop_it = f"stop it first (`tribalmemory service stop`), then {then}"
    if ours is not None:
        raise CliError(
            f"a daemon is running on this data folder at {daemon_url(config)}; {stop_it}", 2
        )
    if (pid := running_pid(config)) is not None:
        raise CliError(
            f"the daemon of this data folder runs (pid {pid}, from its pid file) but does not "
            f"answer at {daemon_url(config)}; {stop_it}",
            2,
        )


def stop(args: argparse.Namespace, config: Config) -> int:
    """``service stop``: SIGTERM the daemon of this data folder and wait until it has exited.

    Needs only the pid file: it works with a broken configuration file too.
    """
    pid = running_pid(config)
    if pid is None:
        print(f"no daemon is running for the data folder {config.data_path}")
        if getattr(args, "config_error", None) is not None:
            return 0
        try:
            return 0 if find_daemon(config, config_path=args.config) is None else 1
        except WrongDaemon:
            return 0  # the daemon on the port serves another data folder
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while _is_daemon(pid):
        if time.monotonic() > deadline:
            raise CliError(f"the daemon (pid {pid}) did not stop within {STOP_TIMEOUT:g} s")
        time.sleep(0.1)
    print(f"stopped the daemon (pid {pid})")
    return 0


def logs(args: argparse.Namespace, config: Config) -> int:
    """``service logs [-f] [-n N] [--grep TEXT]``."""
    path = log_file(config)
    if not path.exists():
        raise CliError(f"no log file at {path} yet: the daemon writes it when it runs")
    for line in tail(path, args.lines, args.grep):
        print(clean(line))
    if args.follow:
        try:
            for new in follow(path, args.grep):
                if new is not None:
                    print(clean(new), flush=True)
        except KeyboardInterrupt:
            pass
    return 0


def reembed(args: argparse.Namespace, config: Config) -> int:
    """``reembed``: recompute every vector with the configured model (daemon stopped)."""
    refuse_running_daemon(config, args.config, "run reembed again")
    from ..embeddings import load_embedder
    from ..portability.progress import bar, wanted
    from ..storage.reembed import reembed as run

    embedder = load_embedder(config.embedding.model, config.embedding.cache_dir)
    with bar("re-embedding", None, wanted(False)) as advance:
        seen = [0]

        def report(done: int, total: int) -> None:
            advance(done - seen[0], total)
            seen[0] = done

        count = run(config, embedder, report)
    print(f"re-embedded {counted(count, 'memory')} with {embedder.model_name}")
    return 0


def mcp(args: argparse.Namespace, config: Config) -> int:
    """``mcp``: the MCP server over stdio, backed by the daemon (started when needed)."""
    from .. import validation as check
    from ..errors import TribalError
    from ..mcp_stdio import run_stdio
    from ..shapes import MAX_SOURCE_INSTANCE_CHARS

    try:
        name = check.text(
            "--source-instance", args.source_instance, MAX_SOURCE_INSTANCE_CHARS, required=False
        )
    except TribalError as exc:
        raise CliError(exc.message, 2) from None
    run_stdio(config, args.config, args.project, name.strip() if name else None, args.all_projects)
    return 0
