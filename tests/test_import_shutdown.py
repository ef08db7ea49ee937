"""SIGTERM during a long import (issue 40 item 16): the client got a 500 and the log a
traceback. Now the page being stored is finished, the client gets 503 saying how many were
imported and to import the file again, the daemon exits 0, and importing the file again
stores the rest, each memory once. A real daemon, a real export file without vectors."""

from __future__ import annotations

import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from helpers_http import LOCAL, start_daemon

from tribalmemory.portability import records

MEMORIES = 1024  # 4 pages of 256: seconds of embedding (3 pages) left after the first page
FIRST_PAGE = 256


def export_file(count: int) -> bytes:
    head = records.header("another-model", 384, "2026-01-01T00:00:00Z", None, False)
    lines = [records.dumps(head)]
    for n in range(count):
        at = f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:00:00Z"
        memory = {
            "type": "memory",
            "id": str(uuid.uuid4()),
            "content": f"Note {n}: the {n % 7}th service restarts after deploy {n * 31 % 997}",
            "source_type": "USER_EXPLICIT",
            "source_instance": "importer",
            "tags": [],
            "context": None,
            "created_at": at,
            "updated_at": at,
            "supersedes": None,
            "superseded_by": None,
            "metadata": {},
            "project": "default",
            "shared": False,
            "episode_id": None,
        }
        lines.append(records.dumps(memory))
    lines.append(records.dumps(records.end(count, 0)))
    return "".join(lines).encode()


def stored(url: str) -> int:
    return int(LOCAL.get(f"{url}/v1/stats", timeout=30).json()["total_memories"])


def test_sigterm_ends_an_import_between_pages_with_a_clear_503(tmp_path: Path) -> None:
    body = export_file(MEMORIES)
    daemon = start_daemon(tmp_path)
    answer: dict[str, Any] = {}

    def post() -> None:
        try:
            answer["response"] = LOCAL.post(
                f"{daemon.url}/v1/import",
                content=body,
                headers={"Content-Type": "application/x-ndjson"},
                timeout=300,
            )
        except httpx.HTTPError as exc:
            answer["error"] = exc

    poster = threading.Thread(target=post)
    poster.start()
    try:
        deadline = time.monotonic() + 120
        while stored(daemon.url) < FIRST_PAGE:  # a page is stored: the import runs
            assert poster.is_alive(), answer
            assert time.monotonic() < deadline, "the import stored nothing within 120 s"
            time.sleep(0.05)
        daemon.process.send_signal(signal.SIGTERM)
        code = daemon.process.wait(60)
        poster.join(60)
    finally:
        daemon.stop()
    output = daemon.output.read_text()
    assert "response" in answer, answer.get("error")
    response = answer["response"]
    assert response.status_code == 503, response.text
    message = response.json()["error"]
    assert message.startswith("the server is shutting down: "), message
    assert "new memories were imported" in message and "Import the same file again" in message
    assert code == 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]

    again = start_daemon(tmp_path)  # the same data folder
    try:
        before = stored(again.url)
        assert FIRST_PAGE <= before < MEMORIES
        assert f"{before} of {MEMORIES} new memories were imported" in message
        done = LOCAL.post(
            f"{again.url}/v1/import",
            content=body,
            headers={"Content-Type": "application/x-ndjson"},
            timeout=300,
        ).json()
        assert (done["existing"], done["stored"]) == (before, MEMORIES - before)
        assert stored(again.url) == MEMORIES
    finally:
        again.stop()
