"""Importing history as plain JSON lines (issue 40 item 8): ``{content, created_at, tags,
source_instance, project}`` a line, without the export's header, ids and end line. Embedded on
import, ids derived from each line (so a second import adds nothing), bad lines refused with
their line number and nothing imported. Through the real app (episodes on) and the CLI."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers_http import Daemon, unique
from starlette.testclient import TestClient

from tribalmemory.cli.main import main
from tribalmemory.timeutil import parse_iso, to_iso, utc_now

NDJSON = {"Content-Type": "application/x-ndjson"}
HISTORY = [
    {
        "content": "Billing exports moved from cron to the scheduler service",
        "created_at": "2025-11-03T09:00:00Z",
        "tags": ["billing"],
        "source_instance": "codex",
        "project": "billing-api",
    },
    {
        "content": "The scheduler retries a failed billing export three times",
        "created_at": "2025-11-03T10:30:00+01:00",
        "project": "billing-api",
    },
    {"content": "Standups are at 09:30 on weekdays", "shared": True},
]


def jsonl(*items: dict[str, Any]) -> bytes:
    return "".join(json.dumps(item) + "\n" for item in items).encode()


def memories(client: TestClient, project: str) -> dict[str, dict[str, Any]]:
    listed = client.get("/v1/memories", params={"project": project, "limit": 100}).json()
    return {m["content"]: m for m in listed["memories"]}


def test_plain_lines_are_imported_and_a_second_import_adds_nothing(client: TestClient) -> None:
    before = utc_now().replace(microsecond=0)
    planned = client.post("/v1/import", headers=NDJSON, params={"dry_run": "true"}, content=b"")
    assert planned.status_code == 422  # an empty file is still refused
    body = b"\n" + jsonl(*HISTORY)  # blank lines are skipped
    done = client.post("/v1/import", headers=NDJSON, content=body)
    assert done.status_code == 200, done.text
    report = done.json()
    assert (report["memories"], report["new"], report["stored"]) == (3, 3, 3)
    assert report["vectors_used"] is False and report["episodes"] == 0

    billing = memories(client, "billing-api")
    first = billing[HISTORY[0]["content"]]
    assert first["created_at"] == "2025-11-03T09:00:00Z"
    assert (first["tags"], first["source_instance"], first["source_type"]) == (
        ["billing"],
        "codex",
        "USER_EXPLICIT",
    )
    second = billing[HISTORY[1]["content"]]
    assert second["created_at"] == "2025-11-03T09:30:00Z"  # in UTC
    assert second["source_instance"] == "default"  # memory.default_source_instance
    undated = memories(client, "default")[HISTORY[2]["content"]]
    assert undated["shared"] is True and parse_iso(undated["created_at"]) >= before
    found = client.post(
        "/v1/recall",
        json={"query": "how often are billing exports retried", "project": "billing-api"},
    ).json()
    assert found["results"][0]["memory"]["content"] == HISTORY[1]["content"]  # embedded

    again = client.post("/v1/import", headers=NDJSON, content=jsonl(*HISTORY)).json()
    assert (again["new"], again["existing"], again["stored"]) == (0, 3, 0)
    assert client.get("/v1/stats").json()["total_memories"] == 3
    marked = b"\xef\xbb\xbf" + jsonl({"content": unique("Saved by an editor with a BOM")})
    assert client.post("/v1/import", headers=NDJSON, content=marked).json()["stored"] == 1
    twice = {"content": unique("Deploys go out on Tuesdays"), "created_at": "2025-11-04T09:00:00Z"}
    doubled = client.post("/v1/import", headers=NDJSON, content=jsonl(twice, twice)).json()
    assert (doubled["memories"], doubled["new"], doubled["stored"]) == (2, 1, 1)
    assert (doubled["existing"], doubled["repeated"]) == (0, 1)  # nothing was stored before


def test_bad_plain_lines_are_refused_with_their_line_numbers(client: TestClient) -> None:
    later = to_iso(utc_now() + timedelta(days=2))
    lines = [
        {"content": unique("fine")},
        {"content": "x", "colour": "red"},
        {"created_at": "2025-11-03T09:00:00Z"},
        {"content": "y", "created_at": later},
        {"type": "memory", "content": "z"},
        {"content": "w", "tags": ["ok\x00"]},
        {"content": "v", "run": ""},
        {"content": "u", "session": "  "},
    ]
    body = jsonl(*lines) + b"not json\n"
    refused = client.post("/v1/import", headers=NDJSON, content=body)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"] == "8 problems in the file; nothing was imported"
    detail = refused.json()["detail"]
    assert [d.split(":")[0] for d in detail] == [f"line {n}" for n in range(2, 10)]
    assert "unknown field 'colour'" in detail[0]
    assert "missing required field" in detail[1] and "content" in detail[1]
    assert "in the future" in detail[2]
    assert 'a plain line has no "type"' in detail[3]
    assert "control character" in detail[4]
    assert "run must not be empty" in detail[5] and "session must not be empty" in detail[6]
    assert "not valid JSON" in detail[7]
    assert client.get("/v1/stats").json()["total_memories"] == 0


def test_cli_imports_plain_lines_through_the_daemon(
    daemon: Daemon, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "history.jsonl"
    notes = [
        {"content": unique("note"), "created_at": f"2025-10-0{day}T12:00:00Z"} for day in (1, 2)
    ]
    file.write_bytes(jsonl(*notes))
    config = ["--config", str(daemon.config_path)]
    assert main(["import", str(file), *config]) == 0
    assert "Imported 2 new memories" in capsys.readouterr().out
    assert main(["import", str(file), *config]) == 0
    assert "Imported 0 new memories (2 already stored" in capsys.readouterr().out
    file.write_bytes(jsonl(notes[0], {"content": ""}))
    assert main(["import", str(file), *config]) == 1
    err = capsys.readouterr().err
    assert "1 problem in the file; nothing was imported" in err and "line 2: content" in err
