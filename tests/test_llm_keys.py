"""A missing API key is found without importing litellm (tribalmemory/llm/keys.py): the table
agrees with litellm's own check, and a runtime or daemon start without a key never imports it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tribalmemory.config import config_from_dict
from tribalmemory.llm import keys, providers
from tribalmemory.llm.client import load_litellm

KEY_NAMES = sorted({name for names, _ in keys.PROVIDER_KEYS.values() for name in names})


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_NAMES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("provider", sorted(keys.PROVIDER_KEYS))
def test_the_table_agrees_with_litellm(
    provider: str, no_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    lit = load_litellm()
    assert provider in lit.provider_list
    model = f"{provider}/some-model"
    said = lit.validate_environment(model=model)["missing_keys"]
    assert keys.missing_key(provider, os.environ) == said and said  # missing: the same name
    names, _ = keys.PROVIDER_KEYS[provider]
    for name in names:  # any one of them is a key, for both
        with monkeypatch.context() as env:
            env.setenv(name, "x")
            assert lit.validate_environment(model=model)["missing_keys"] == []
            assert keys.missing_key(provider, os.environ) == []


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("openai", "gpt-4o-mini"),
        ("openai", "openai/gpt-4o-mini"),
        ("openai", "anthropic/claude-3-5-sonnet-20240620"),
        ("anthropic", "claude-3-5-sonnet-20240620"),
        (" groq ", " llama-3.1-8b-instant "),
        ("hosted_vllm", "hosted_vllm/qwen"),
    ],
)
def test_resolve_agrees_with_the_client(provider: str, model: str) -> None:
    cfg = config_from_dict(
        {"episodes": {"summarizer_provider": provider, "summarizer_model": model}}
    ).episodes
    assert keys.resolve(provider, model) == providers.resolve(cfg, load_litellm())


def test_a_model_under_an_unknown_head_is_left_to_litellm() -> None:
    # "meta-llama/..." is a model name under hosted_vllm, "bedrock/..." a litellm provider:
    # only litellm's provider list tells them apart.
    assert keys.resolve("hosted_vllm", "meta-llama/Llama-3-8B") is None
    assert keys.resolve("openai", "bedrock/anthropic.claude-v2") is None
    assert keys.missing_key("bedrock", {}) is None


START_PROBE = """
import asyncio, json, logging, sys
from tribalmemory.cli.service import freeze_start_up_heap
from tribalmemory.config import config_from_dict
from tribalmemory.runtime import start_runtime

logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
episodes = {"enabled": True, "detector_strategy": "embedding", "summarizer_provider": "openai",
            "summarizer_model": "gpt-4o-mini"}
config = config_from_dict({"data_dir": sys.argv[1], "episodes": episodes})

async def main():
    rt = await start_runtime(config, run_scheduler=False)
    try:
        await rt.episodes.summariser.check()
        await freeze_start_up_heap(config)  # what `serve` runs beside the check
        llm = rt.api.health()["llm"]
    finally:
        await rt.stop()
    print(json.dumps({"litellm": "litellm" in sys.modules, "llm": llm}))

asyncio.run(main())
"""


@pytest.mark.parametrize("empty", [None, "", "  "])
def test_a_runtime_without_a_key_never_imports_litellm(tmp_path: Path, empty: str | None) -> None:
    """The episode engine's LLM check and the daemon's start-up find the missing key without
    the seconds-long import, and still say so in the health field (state ``offline``). A key
    set to nothing is no key: litellm would count it, and every call fail on it."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_NAMES}
    if empty is not None:
        env["OPENAI_API_KEY"] = empty
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    done = subprocess.run(
        [sys.executable, "-c", START_PROBE, str(tmp_path / "data")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["litellm"] is False, done.stderr[-3000:]
    llm = found["llm"]
    # offline is a mode (issue 40.5): said by the health field, not a WARNING per command
    assert llm["state"] == "offline" and "set OPENAI_API_KEY" in llm["reason"]
    assert "extractive summaries" in llm["fallback"]
    assert "LLM features unavailable" not in done.stderr
