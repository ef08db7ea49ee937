"""Episodes read by people keep their shape (issue 40.10): a summary keeps its line breaks in
``episodes show``, ``episodes replay`` and search results, and ``episodes show`` prints the
structured record's decisions, events and lessons as readable lines, not JSON.

An episode made and closed by the real engine (no LLM: the extractive summary and the rule-based
record), then read through the CLI in local mode.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from helpers_http import write_config
from test_cli import Capture, run, run_json

from tribalmemory.config import load_config
from tribalmemory.runtime import start_runtime

NOTES = [
    (
        "2025-03-03T09:00:00Z",
        "Error: the nightly invoice export crashed with a timeout on the invoices table.",
    ),
    (
        "2025-03-03T11:00:00Z",
        "Decided to export the invoices in pages of 1000 rows because "
        "the single query held a table lock for minutes.",
    ),
    (
        "2025-03-04T10:00:00Z",
        "Fixed: the invoice export runs in pages now and finished in 4 minutes.",
    ),
    ("2025-03-04T12:00:00Z", "Lesson: never export a large table in one query."),
]
HERE = ("--project", "default")  # where the engine stored them (the CLI's default: the cwd's)


@pytest.fixture
def closed_episode(tm_home: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """(config path, episode id): the four notes in one closed episode with its summary."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with socket.socket() as sock:  # a port nobody answers on: the CLI runs locally
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = {"detector_strategy": "embedding", "summary_debounce_seconds": 0}
    config = write_config(tm_home, server={"port": port}, episodes=settings)

    async def make() -> str:
        rt = await start_runtime(load_config(config), run_scheduler=False)
        try:
            ids = [
                (await rt.api.remember(text, created_at=at, skip_dedup=True))["memory_id"]
                for at, text in NOTES
            ]
            made = await rt.api.episode_create("Invoice export timeouts", ids)
            await rt.api.episode_close(made["episode_id"])
            assert await rt.episodes.worker.drain(60), "the summary job did not finish"
            return str(made["episode_id"])
        finally:
            await rt.stop()

    import asyncio

    return str(config), asyncio.run(make())


def test_show_prints_the_summary_lines_and_a_readable_record(
    closed_episode: tuple[str, str], capsys: Capture
) -> None:
    config, episode = closed_episode
    got = run_json(capsys, "episodes", "show", episode, "--config", config)["episode"]
    record = got["structured"]
    assert record["decisions"] and record["events"] and record["lessons"]
    assert "\n" in got["summary"]  # the extractive summary: a header and one line a point
    code, out, err = run(capsys, "episodes", "show", episode, "--config", config)
    assert code == 0, err
    lines = out.splitlines()
    summary_at = lines.index("summary:")
    for offset, line in enumerate(got["summary"].splitlines(), 1):
        assert lines[summary_at + offset] == "  " + line
    assert '{"' not in out  # no item printed as JSON
    decision = record["decisions"][0]
    assert f"  - 2025-03-03  {decision['chosen']}" in lines
    assert f"    because: {decision['rationale']}" in lines
    assert "events:" in lines and "lessons:" in lines
    for event in record["events"]:
        assert f"  - {event['at'][:10]}  {event['type']}: {event['text']}" in lines
    assert f"  - {record['lessons'][0]['text']}" in lines
    assert "structured (extractive):" in lines
    assert any(line.startswith(f"  outcome: {record['outcome']} (") for line in lines)


def test_replay_and_search_keep_the_summary_line_breaks(
    closed_episode: tuple[str, str], capsys: Capture
) -> None:
    config, episode = closed_episode
    summary = run_json(capsys, "episodes", "show", episode, "--config", config)["episode"][
        "summary"
    ]
    first_point = summary.splitlines()[1]
    code, out, err = run(capsys, "episodes", "replay", "invoice export", *HERE, "--config", config)
    assert code == 0, err
    assert "   " + first_point in out.splitlines()  # the summary's lines, indented
    found = run_json(capsys, "episodes", "search", "invoice export", *HERE, "--config", config)
    (hit,) = found["episodes"]
    assert hit["id"] == episode and hit["summary"].splitlines()[1] == first_point
    replayed = run_json(capsys, "episodes", "replay", "invoice export", *HERE, "--config", config)
    assert json.dumps(replayed["episodes"][0]["summary"]).count("\\n") >= 1
