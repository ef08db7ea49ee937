"""Upgrading from 0.9: its configuration loads with deprecation warnings, and the
``tribalmemory-mcp`` command it wrote into agents' configurations still runs the MCP server."""

from __future__ import annotations

import asyncio
import importlib
import logging
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from helpers_http import LOCAL, free_port, start_daemon, subprocess_env, unique, write_config

from tribalmemory.config import LEGACY_KEYS, load_config

# What `tribalmemory init` of 0.9 wrote, plus the sections its TribalMemoryConfig accepted.
CONFIG_09 = """\
# Tribal Memory Configuration — FastEmbed (Zero Cloud)
instance_id: laptop-claude

embedding:
  provider: fastembed
  model: BAAI/bge-small-en-v1.5
  dimensions: 384

db:
  provider: lancedb
  path: ~/.tribal-memory/lancedb

server:
  host: 127.0.0.1
  port: {port}
  session_retention_days: 30

search:
  hybrid_enabled: true
  vector_weight: 0.7
  text_weight: 0.3
  reranking: heuristic
  lazy_spacy: true

episodes:
  enabled: false
  summarizer_temperature: 0.3
  active_window_days: 14
  embedding_similarity_threshold: 0.75

auto_capture: true
"""


def test_a_09_config_loads_with_a_warning_per_key(
    tm_home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG_09.format(port=18790), encoding="utf-8")
    config = load_config(path)
    assert config.memory.default_source_instance == "laptop-claude"
    assert config.embedding.model == "tribalmemory/all-MiniLM-L6-v2-int8"  # bundled, offline
    assert config.server.port == 18790 and config.episodes.active_window_days == 14.0
    found = {note.split()[2] for note in config.deprecations}
    assert found == set(LEGACY_KEYS)
    for note in config.deprecations:
        key = note.split()[2]
        assert LEGACY_KEYS[key] in note and "version 0.9" in note

    explicit = yaml.safe_load(CONFIG_09.format(port=1))
    explicit["memory"] = {"default_source_instance": "chosen"}
    explicit["embedding"] = {"model": "BAAI/bge-small-en-v1.5"}  # today's form: kept
    path.write_text(yaml.safe_dump(explicit), encoding="utf-8")
    config = load_config(path)
    assert config.memory.default_source_instance == "chosen"
    assert config.embedding.model == "BAAI/bge-small-en-v1.5"
    assert not any(note.split()[2].startswith("embedding") for note in config.deprecations)

    caplog.set_level(logging.WARNING)
    from tribalmemory.cli.main import main

    assert main(["token", "show", "--config", str(path)]) == 1  # any command warns
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(m.startswith("deprecated setting instance_id (version 0.9)") for m in warned)


def test_the_daemon_runs_a_09_config_and_logs_the_deprecations(tmp_path: Path) -> None:
    sections = yaml.safe_load(CONFIG_09.format(port=1))
    sections.pop("server")  # start_daemon writes its own (with a free port)
    daemon = start_daemon(tmp_path, **sections)
    try:
        stored = LOCAL.post(
            f"{daemon.url}/v1/remember", json={"content": unique("0.9 upgrade")}
        ).json()
        memory = LOCAL.get(f"{daemon.url}/v1/memory/{stored['memory_id']}")
        assert memory.json()["source_instance"] == "laptop-claude"
    finally:
        assert daemon.stop() == 0
    log = (daemon.home / "logs" / "server.log").read_text(encoding="utf-8")
    for key in set(LEGACY_KEYS) - {"server.session_retention_days"}:
        assert f"WARNING tribalmemory.serve: deprecated setting {key} (version 0.9)" in log


def test_tribalmemory_mcp_is_declared_as_a_command() -> None:
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    scripts = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["tribalmemory-mcp"] == "tribalmemory.cli.main:mcp_main"
    module, _, name = scripts["tribalmemory-mcp"].partition(":")
    assert callable(getattr(importlib.import_module(module), name))


@pytest.mark.skipif(
    shutil.which("tribalmemory-mcp", path=str(Path(sys.executable).parent)) is None,
    reason="the package is not installed with its console scripts",
)
def test_tribalmemory_mcp_serves_mcp_on_stdio(tmp_path: Path) -> None:
    """0.9 wrote ``{"command": "tribalmemory-mcp"}`` (no arguments) into agents' configs."""
    from mcp import Client, StdioServerParameters

    home = tmp_path / "home"
    write_config(home, server={"port": free_port()}, episodes={"enabled": False})
    script = shutil.which("tribalmemory-mcp", path=str(Path(sys.executable).parent))
    env = subprocess_env(home, tmp_path)
    params = StdioServerParameters(command=str(script), args=[], env=env, cwd=str(tmp_path))

    async def scenario() -> list[str]:
        async with Client(params, read_timeout_seconds=60) as agent:
            return [tool.name for tool in (await agent.list_tools()).tools]

    try:
        names = asyncio.run(scenario())
    finally:  # listing the tools starts no daemon; stop one if a call did
        subprocess.run(
            [sys.executable, "-m", "tribalmemory", "service", "stop"],
            env=env,
            capture_output=True,
            timeout=60,
        )
    assert {"tribal_remember", "tribal_recall"} <= set(names)
