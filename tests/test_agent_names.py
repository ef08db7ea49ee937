"""Who stored a memory, and when (issue 40 items 7 and 8), against a real daemon.

Item 7: every MCP agent was recorded as ``source_instance: "default"``, so participants could
not tell Claude Code from Codex. Now an MCP client's own name (the clientInfo of its
initialize request, over the daemon's /mcp and over stdio) is the default, and ``init`` names
each client explicitly (``tribalmemory mcp --source-instance``).

Item 8: CLI ``remember`` and MCP ``tribal_remember`` took no ``created_at``; they do now, with
the HTTP API's check (at most 5 minutes ahead).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers_http import LOCAL, Daemon, start_daemon, unique
from mcp import Client, StdioServerParameters
from mcp_types import Implementation

from tribalmemory.timeutil import to_iso, utc_now

LEARNED = "2026-03-02T14:05:00Z"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    started = start_daemon(tmp_path_factory.mktemp("agents"))
    try:
        yield started
    finally:
        started.stop()


def ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error_of(result: Any) -> str:
    assert result.is_error, result.structured_content
    return "\n".join(part.text for part in result.content if hasattr(part, "text"))


def stored(daemon: Daemon, memory_id: str) -> dict[str, Any]:
    answer = LOCAL.get(f"{daemon.url}/v1/memory/{memory_id}", timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def stdio(daemon: Daemon, *extra: str) -> StdioServerParameters:
    """``tribalmemory mcp`` (through ``python -m tribalmemory``) against ``daemon``."""
    args = ["-m", "tribalmemory", "mcp", "--config", str(daemon.config_path), *extra]
    return StdioServerParameters(
        command=sys.executable, args=args, env=daemon.env, cwd=str(daemon.home)
    )


async def test_http_mcp_clients_are_told_apart_by_their_client_info(daemon: Daemon) -> None:
    url = f"{daemon.url}/mcp"
    ids: dict[str, str] = {}
    for name, mode in (("claude-code", "auto"), ("codex-mcp-client", "legacy")):
        info = Implementation(name=name, version="1.2")
        async with Client(url, client_info=info, mode=mode) as agent:  # type: ignore[arg-type]
            result = ok(await agent.call_tool("tribal_remember", {"content": unique(name)}))
            ids[name] = result["memory_id"]
    assert stored(daemon, ids["claude-code"])["source_instance"] == "claude-code"
    assert stored(daemon, ids["codex-mcp-client"])["source_instance"] == "codex-mcp-client"


async def test_stdio_client_name_and_an_explicit_name(daemon: Daemon) -> None:
    info = Implementation(name="claude-ai", version="0.7")
    async with Client(stdio(daemon), client_info=info, read_timeout_seconds=120) as agent:
        own = ok(await agent.call_tool("tribal_remember", {"content": unique("desktop")}))
        fixed = ok(
            await agent.call_tool(
                "tribal_correct", {"memory_id": own["memory_id"], "content": unique("fixed")}
            )
        )
    assert stored(daemon, own["memory_id"])["source_instance"] == "claude-ai"
    assert stored(daemon, fixed["memory_id"])["source_instance"] == "claude-ai"

    named = stdio(daemon, "--source-instance", "codex")
    async with Client(named, client_info=info, read_timeout_seconds=120) as agent:
        result = ok(await agent.call_tool("tribal_remember", {"content": unique("codex")}))
    assert stored(daemon, result["memory_id"])["source_instance"] == "codex"  # the name wins


async def test_init_names_each_client_and_its_command_uses_the_name(
    daemon: Daemon, tmp_path: Path
) -> None:
    env = dict(daemon.env, CODEX_HOME=str(tmp_path / "codex"))
    subprocess.run(
        [sys.executable, "-m", "tribalmemory", "init", "--codex", "--claude-code"],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    entry = tomllib.loads((tmp_path / "codex" / "config.toml").read_text())["mcp_servers"][
        "tribal-memory"
    ]
    assert entry["args"][-2:] == ["--source-instance", "codex"]
    server = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=env, cwd=str(daemon.home)
    )
    async with Client(server, read_timeout_seconds=120) as agent:  # clientInfo name: "mcp"
        result = ok(await agent.call_tool("tribal_remember", {"content": unique("init")}))
    assert stored(daemon, result["memory_id"])["source_instance"] == "codex"


async def test_mcp_remember_takes_created_at_with_the_http_check(daemon: Daemon) -> None:
    async with Client(f"{daemon.url}/mcp") as agent:
        dated = {"content": unique("learned in March"), "created_at": LEARNED}
        result = ok(await agent.call_tool("tribal_remember", dated))
        assert stored(daemon, result["memory_id"])["created_at"] == LEARNED
        later = to_iso(utc_now() + timedelta(days=1))
        refused = error_of(
            await agent.call_tool("tribal_remember", {"content": unique(), "created_at": later})
        )
        assert "created_at" in refused and "in the future" in refused


def test_cli_remember_takes_created_at(daemon: Daemon) -> None:
    base = [sys.executable, "-m", "tribalmemory", "remember", "--config", str(daemon.config_path)]
    done = subprocess.run(
        [*base, unique("dated"), "--created-at", LEARNED, "--json"],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    memory_id = json.loads(done.stdout)["memory_id"]
    assert stored(daemon, memory_id)["created_at"] == LEARNED
    later = to_iso(utc_now() + timedelta(days=1))
    refused = subprocess.run(
        [*base, unique(), "--created-at", later],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1 and "in the future" in refused.stderr, refused.stderr
    bad = subprocess.run(
        [*base, unique(), "--created-at", "yesterday"],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1 and "created_at" in bad.stderr, bad.stderr
