"""Import from the predecessor: a tribalmemory 0.9 data folder (LanceDB + episodes.db).

The fixture (tests/fixtures/tribalmemory-0.9, written by its make.py with the real 0.9.0
package) holds 7 memories (one deleted by 0.9, one correcting another), an EPISODE_SUMMARY
memory, a closed episode of three memories with a summary and an active one of one memory.
The import runs through the CLI in local mode on a fresh data folder with episodes on.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers_http import EPISODES, write_config

from tribalmemory.cli.main import main
from tribalmemory.config import load_config
from tribalmemory.errors import NotFound
from tribalmemory.portability import legacy09
from tribalmemory.runtime import start_runtime

FIXTURE = Path(__file__).parent / "fixtures" / "tribalmemory-0.9"
BILLING = "ep-86203922210d4b19aadb666ff98ac06d"  # 0.9 episode 86203922-210d-4b19-...
WEB = "ep-01643f6588254b34ae65b8fd196c828d"
DELETED = "755bc462-781f-4b7a-828e-56da3134844c"
SUNDAY, SATURDAY = "efc3e458-51eb-4a06-bc56-b00b77105926", "b5e6c743-aa54-4e45-bbeb-0a3fd574a64b"
BILLING_IDS = [
    "f1889248-a371-4cf1-b282-de2944cf1299",
    "54d62a8e-4b74-4117-830f-265fce4452a5",
    "c4841654-1774-4679-b228-069ed6415c93",
]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.startswith(("{", "[")) else out, err


@pytest.fixture
def old_folder(tmp_path: Path) -> Path:
    """A copy of the 0.9 home (``~/.tribal-memory``: its ``lancedb/`` inside)."""
    home = tmp_path / "tribal-memory-0.9"
    shutil.copytree(FIXTURE / "lancedb", home / "lancedb")
    return home


def test_a_09_folder_imports_memories_and_episodes_once(
    old_folder: Path, tm_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(write_config(tm_home, episodes=EPISODES))
    args = ("import", "--from", "tribalmemory-0.9", str(old_folder), "--json", "--config", config)
    code, planned, _ = cli(capsys, *args, "--dry-run")
    assert code == 0, planned
    assert (planned["new"], planned["episodes_new"], planned["deleted_in_0_9"]) == (6, 2, 1)
    code, done, _ = cli(capsys, *args)
    assert code == 0 and (done["stored"], done["episodes_created"]) == (6, 2), done

    seen = asyncio.run(read_back(load_config(Path(config))))
    billing, web = seen["billing"], seen["web"]
    episode = billing["episode"]
    assert billing["memory_ids"] == BILLING_IDS  # in memory time order
    assert episode["title"] == "Billing deploy: migration lock timeout"
    assert (episode["status"], episode["summary_kind"]) == ("closed", "llm")
    assert episode["summary"].startswith("The billing-api deploy failed on the migration lock")
    assert episode["metadata"]["participants"] == ["claude-code", "codex"]
    span = {"start": "2025-06-02T09:00:00Z", "end": "2025-06-02T11:00:00Z"}
    assert episode["time_span"] == span
    assert web["memory_ids"] == ["a820bbc2-428b-4b15-ac43-b453f22ed3f0"]
    assert web["episode"]["status"] == "active"

    first, old, new = seen["first"], seen["sunday"], seen["saturday"]
    assert first["content"] == "The deploy of billing-api fails: the migration lock times out"
    assert (first["source_type"], first["source_instance"]) == ("AUTO_CAPTURE", "claude-code")
    assert first["tags"] == ["billing", "deploy"] and first["context"] == "repo acme/billing"
    assert first["created_at"] == "2025-06-02T09:00:00Z"  # 0.9's naive time, read as UTC
    assert first["episode_id"] == BILLING
    assert (old["source_type"], old["superseded_by"]) == ("LEGACY", SATURDAY)
    assert (new["source_type"], new["supersedes"]) == ("CORRECTION", SUNDAY)
    assert seen["deleted"] == "NotFound"  # 0.9 had deleted it
    # 0.9's summary is the EPISODE_SUMMARY memory here too (same id), so recall finds it.
    assert seen["summaries"][:1] == [episode["summary_memory_id"]]

    code, again, _ = cli(capsys, *args)
    assert (again["stored"], again["episodes_created"], again["existing"]) == (0, 0, 6)


async def read_back(config: Any) -> dict[str, Any]:
    """What the imported data folder answers (a fresh runtime on it)."""
    runtime = await start_runtime(config)
    api = runtime.api
    try:
        try:
            await api.get_memory(DELETED)
            deleted = "found"
        except NotFound:
            deleted = "NotFound"
        found = await api.recall(
            "billing migration lock timeout deploy", source_types=["EPISODE_SUMMARY"]
        )
        return {
            "billing": await api.episode_get(BILLING),
            "web": await api.episode_get(WEB),
            "first": await api.get_memory(BILLING_IDS[0]),
            "sunday": await api.get_memory(SUNDAY),
            "saturday": await api.get_memory(SATURDAY),
            "deleted": deleted,
            "summaries": [r["memory"]["id"] for r in found["results"]],
        }
    finally:
        await runtime.stop()


def test_not_a_09_folder_is_a_clear_error(
    tmp_path: Path, tm_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(write_config(tm_home, episodes=EPISODES))
    code, _, err = cli(
        capsys, "import", "--from", "tribalmemory-0.9", str(tmp_path), "--config", config
    )
    assert code == 1 and "is not a tribalmemory 0.9 data folder" in err


def test_mapping_of_a_09_row() -> None:
    row = {
        "id": "0b8f4c0e-5a53-4c4b-9d47-0d3d6f1e2a10",
        "content": "x",
        "source_type": "user_explicit",
        "source_instance": "",
        "tags": '["a"]',
        "context": "",
        "created_at": "2025-01-02T03:04:05.123456",
        "updated_at": "",
        "confidence": 0.5,
        "supersedes": "",
        "related_to": '["9c1c"]',
    }
    record = legacy09.memory_record(row, None, None)
    assert record["source_type"] == "USER_EXPLICIT" and record["source_instance"] == "unknown"
    assert record["created_at"] == record["updated_at"] == "2025-01-02T03:04:05.123456Z"
    assert record["context"] is None and record["supersedes"] is None
    assert record["metadata"] == {"confidence": 0.5, "related_to": ["9c1c"]}
    assert legacy09.episode_id("86203922-210d-4b19-aadb-666ff98ac06d") == BILLING
