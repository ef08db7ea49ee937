"""The Python client (docs/python.md): its examples run against a real daemon."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers_http import Daemon, start_daemon

from tribalmemory import AsyncClient, Client
from tribalmemory.cli.main import main as cli_main
from tribalmemory.errors import InvalidInput, Unavailable
from tribalmemory.shapes import IngestConversationResult, RecallResult, RememberResult

DOC = Path(__file__).resolve().parents[1] / "docs" / "python.md"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = start_daemon(
        tmp_path_factory.mktemp("client"), episodes={"detector_strategy": "embedding"}
    )
    yield running
    running.stop()


def examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_docs_examples_run(
    daemon: Daemon, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRIBAL_MEMORY_CONFIG", str(daemon.config_path))
    blocks = examples()
    assert len(blocks) == 4
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert "Staging Postgres listens on port 6543" in out
    assert "1 memories tagged postgres" in out
    assert "not found: no episode with id ep-doesnotexist" in out
    assert "web sees the invoice memory: False" in out  # another project's memory
    assert "web sees the shared rule: True" in out
    assert "all projects: ['billing-api'" in out  # project "*" reads every project
    assert "billing-api 2 1" in out
    assert "session memories: 2" in out and "run hits: 2" in out  # the scope filters
    assert "nightly-2026-03-02 ['ci-bot'] 2" in out  # sessions(): its agents and count


def test_results_are_typed_and_errors_are_the_clis(daemon: Daemon) -> None:
    with Client(daemon.config_path) as tm:
        stored = tm.remember("The nightly backup job runs at 02:30 UTC on the ops host.")
        assert isinstance(stored, RememberResult) and stored.success
        found = tm.recall("when does the nightly backup run", limit=1)
        assert isinstance(found, RecallResult)
        assert found.results[0].memory_id == stored.memory_id
        with pytest.raises(InvalidInput, match="limit"):
            tm.recall("backup", limit=0)
        with pytest.raises(AttributeError, match="no operation 'rememberr'"):
            tm.rememberr("typo")
        assert "remember" in dir(tm) and "episodes_list" in dir(tm)


def test_a_conversation_goes_in_through_the_client(daemon: Daemon) -> None:
    """The daemon stores the turns once; a later page lands at its position; a bad message is
    the client's InvalidInput naming it."""
    said = [
        {"role": "user", "content": "Where do the release notes for 4.2 live?", "name": "ana"},
        {"role": "assistant", "content": "The 4.2 release notes are in docs/releases/4.2.md."},
        {"role": "user", "content": "thanks"},
    ]
    with Client(daemon.config_path) as tm:
        done = tm.ingest_conversation(conversation_id="client-1", messages=said)
        assert isinstance(done, IngestConversationResult)
        assert (done.turns, done.stored, done.folded) == (2, 2, 1)
        later = [{"role": "user", "content": "Who signs off the 4.2 release notes?"}]
        page = tm.ingest_conversation(conversation_id="client-1", messages=later, first_index=3)
        assert (page.stored, page.memory_ids[0] in done.memory_ids) == (1, False)
        again = tm.ingest_conversation(conversation_id="client-1", messages=said)
        assert (again.stored, again.existing, again.memory_ids) == (0, 2, done.memory_ids)
        first = tm.get_memory(done.memory_ids[0])
        assert first.source_instance == "ana" and first.metadata["message_index"] == 0
        with pytest.raises(InvalidInput, match=r"messages\[0\]: role must be one of"):
            tm.ingest_conversation(
                conversation_id="client-2", messages=[{"role": "bot", "content": "x"}]
            )


def entities_read(tm: Client, deadline: float = 60.0) -> None:
    """Wait until the daemon's entity work has read every memory (it runs after the reply)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if tm.health().episodes.entities_waiting == 0:
            return
        time.sleep(0.1)
    pytest.fail(f"the entity work did not finish within {deadline} s")


def test_one_entity_is_read_by_any_of_its_names(
    daemon: Daemon, capsys: pytest.CaptureFixture[str]
) -> None:
    """``entity_get`` takes an argument called ``name``, as the client's own sending method
    did: the client and ``tribalmemory entities NAME`` (which goes through it) once failed
    with a TypeError before sending anything."""
    with Client(daemon.config_path) as tm:
        stored = tm.remember("The orders-svc deploy now waits for the ledger migration.")
        entities_read(tm)
        found = tm.entity_get("orders-svc")
        assert found.entity.name == "orders-service"
        assert stored.memory_id in [m.memory_id for m in found.memories]
    capsys.readouterr()
    config = str(daemon.config_path)
    code = cli_main(["entities", "orders service", "--project", "default", "--config", config])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert "orders-service (system)" in out and stored.memory_id in out


async def test_the_async_client(daemon: Daemon) -> None:
    async with AsyncClient(daemon.config_path) as tm:
        stats = await tm.stats()
        assert stats.total_memories >= 1
        health = await tm.health()
        assert health.status == "ok"


def test_no_daemon_is_a_clear_error(tmp_path: Path) -> None:
    from helpers_http import free_port, write_config

    config = write_config(tmp_path / "home", server={"port": free_port()})
    with pytest.raises(Unavailable, match="no daemon answers") as caught:
        Client(config)
    assert "tribalmemory serve" in str(caught.value.detail)
