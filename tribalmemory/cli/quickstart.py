"""``tribalmemory quickstart``: start the daemon, store a memory, recall it, say what's next."""

from __future__ import annotations

import argparse
import asyncio
import shlex
from pathlib import Path
from typing import Any

from ..client import DaemonClient, ensure_daemon
from ..config import Config
from ..llm.client import QUIET_STATES
from .commands import after_llm_check
from .init import installed_script, shell_command
from .output import clean

SAMPLE = (
    "Tribal Memory quick start: the team's shared memory server runs at {url}; agents "
    "connect with `tribalmemory init --claude-code --codex --claude-desktop`."
)


def quickstart(args: argparse.Namespace, config: Config) -> int:
    client = ensure_daemon(config, args.config)
    print(f"1. daemon running at {client.base_url} (data in {config.data_path})")
    return asyncio.run(_tour(client, args.config, args.project))


def next_steps(config_path: str | None) -> list[str]:
    """The "Next:" lines, runnable as printed: the full path of ``tribalmemory`` unless ``PATH``
    finds it, and the ``--config`` the quick start used."""
    command = shell_command()
    extra = f" --config {shlex.quote(str(Path(config_path).resolve()))}" if config_path else ""
    lines = ["Next:"]
    if command != "tribalmemory":
        script = installed_script()
        activate = script.parent / "activate" if script else None
        hint = (
            f" (or first `source {shlex.quote(str(activate))}`, then type `tribalmemory`)"
            if activate is not None and activate.is_file()
            else ""
        )
        lines.append(f"  `tribalmemory` is not on your PATH: run it as {command}{hint}")
    lines += [
        f"  {command} init --claude-code --codex --claude-desktop{extra}   # connect agents",
        f"  {command} status{extra}",
        f"  {command} service stop{extra}",
    ]
    return lines


async def _tour(api: DaemonClient, config_path: str | None, project: str) -> int:
    """Remember and recall in ``project``: the one every other command run here uses."""
    try:
        stored = await api.remember(
            SAMPLE.format(url=api.base_url),
            tags=["quickstart"],
            source_type="USER_EXPLICIT",
            project=project,
        )
        if stored["success"]:
            print(f"2. remembered memory {stored['memory_id']} in project {project}")
        else:
            print(f"2. already remembered in project {project} (memory {stored['duplicate_of']})")
        found = await api.recall(
            "how do agents connect to the shared memory?", limit=1, project=project
        )
        for hit in found["results"]:
            score, content = hit["similarity_score"], hit["memory"]["content"]
            print(f"3. recalled (similarity {score:.2f}): {clean(content)}")
    finally:
        await api.aclose()

    async def health_now() -> dict[str, Any]:
        return api.health()

    health = await after_llm_check(health_now)
    llm = health.get("llm") or {}
    episodes = health.get("episodes")
    if episodes is None:
        print("4. episodes are disabled (episodes.enabled: false)")
    elif llm.get("state") == "ready":
        print(f"4. episodes on, LLM ready: {clean(llm.get('reason', ''))}")
    elif llm.get("state") in QUIET_STATES:  # a mode, not a fault
        print(f"4. episodes on, {llm.get('state')}, extractive: {clean(llm.get('reason', ''))}")
        print("   " + clean(llm.get("fallback", "")))
    else:
        print(f"4. episodes on without an LLM ({llm.get('state')}): {clean(llm.get('reason', ''))}")
        print("   " + clean(llm.get("fallback", "")))
    print("\n".join(next_steps(config_path)))
    return 0
