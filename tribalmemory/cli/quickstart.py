"""``tribalmemory quickstart``: start the daemon, store a memory, recall it, say what's next."""

from __future__ import annotations

import argparse
import asyncio
import time

from ..client import ensure_daemon
from ..config import Config

SAMPLE = (
    "Tribal Memory quick start: the team's shared memory server runs at {url}; agents "
    "connect with `tribalmemory init --claude-code --codex --claude-desktop`."
)


def quickstart(args: argparse.Namespace, config: Config) -> int:
    client = ensure_daemon(config, args.config)
    print(f"1. daemon running at {client.base_url} (data in {config.data_path})")
    return asyncio.run(_tour(client, config))


async def _tour(client: object, config: Config) -> int:
    api = client  # DaemonClient: the same methods as the in-process API
    stored = await api.remember(
        SAMPLE.format(url=api.base_url),  # type: ignore[attr-defined]
        tags=["quickstart"],
        source_type="USER_EXPLICIT",
    )
    if stored["success"]:
        print(f"2. remembered memory {stored['memory_id']}")
    else:
        print(f"2. already remembered (memory {stored['duplicate_of']})")
    found = await api.recall(
        "how do agents connect to the shared memory?",  # type: ignore
        limit=1,
    )
    for hit in found["results"]:
        print(f"3. recalled (similarity {hit['similarity_score']:.2f}): {hit['memory']['content']}")
    health = api.health()  # type: ignore[attr-defined]
    deadline = time.monotonic() + 20  # the LLM check imports litellm in the background
    while (health.get("llm") or {}).get("state") == "starting" and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        health = api.health()  # type: ignore[attr-defined]
    llm = health.get("llm") or {}
    episodes = health.get("episodes")
    if episodes is None:
        print("4. episodes are disabled (episodes.enabled: false)")
    elif llm.get("state") == "ready":
        print(f"4. episodes on, LLM ready: {llm.get('reason', '')}")
    else:
        print(f"4. episodes on without an LLM ({llm.get('state')}): {llm.get('reason', '')}")
        print("   " + llm.get("fallback", ""))
    print(
        "Next: `tribalmemory init --claude-code --codex --claude-desktop` to connect agents, "
        "`tribalmemory status`, `tribalmemory service stop`."
    )
    return 0
