"""Export, import, backup and restore on the real engine (store, embedder, episode engine).

The HTTP routes run on the real app (``client``); the CLI runs in local mode on a data folder
of its own; the restored folder is opened by a fresh runtime and must answer as the original.
"""

from __future__ import annotations

import asyncio
import io
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers_http import EPISODES, unique, write_config
from starlette.testclient import TestClient

from tribalmemory.cli.main import main
from tribalmemory.config import load_config
from tribalmemory.embeddings import BUNDLED_MODEL
from tribalmemory.portability.sparse import copy_sparse
from tribalmemory.runtime import start_runtime
from tribalmemory.storage.space import allocated

NDJSON = {"Content-Type": "application/x-ndjson"}
THREAD = [
    "Refresh token rotation bug: two tabs refresh at once and the family is revoked",
    "Refresh token rotation: the grace window for the old token is too short",
    "Refresh token rotation fix: allow the previous token for 30 seconds",
]


def store_some(client: TestClient) -> list[dict[str, Any]]:
    """Three memories of one thread (an episode forms) and one unrelated, an hour apart;
    their JSON once the engine has placed them."""
    texts = [*THREAD, unique("The office coffee machine is descaled on Fridays")]
    stored = []
    for hour, text in enumerate(texts):
        body = {
            "content": text,
            "tags": ["auth"] if "token" in text else ["office"],
            "source_instance": "claude-code",
            "context": "repo acme/web",
            "created_at": f"2025-03-03T{9 + hour:02d}:00:00Z",
        }
        response = client.post("/v1/remember", json=body)
        assert response.status_code == 200 and response.json()["success"], response.text
        stored.append(response.json()["memory_id"])
    settle(client)
    return [client.get(f"/v1/memory/{mid}").json() for mid in stored]


def settle(client: TestClient) -> None:
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    assert client.portal is not None
    assert client.portal.call(runtime.episodes.worker.drain, 60)


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_export_streams_memories_with_their_episode_and_the_episodes(
    client: TestClient,
) -> None:
    stored = store_some(client)
    exported = client.get("/v1/export")
    assert exported.status_code == 200
    assert exported.headers["content-type"] == "application/x-ndjson"
    records = lines(exported.text)
    head, rest, end = records[0], records[1:-1], records[-1]
    assert head["type"] == "header" and head["format"] == "tribalmemory-export"
    assert head["model"] == BUNDLED_MODEL and head["dim"] == 384 and not head["vectors"]
    memories = {r["id"]: r for r in rest if r["type"] == "memory"}
    episodes = [r for r in rest if r["type"] == "episode"]
    assert end == {
        "type": "end",
        "memories": len(memories),
        "episodes": len(episodes),
        "causes": 0,  # no link added by hand (tests/test_causes.py exports some)
    }
    assert len(memories) + len(episodes) == len(rest)
    assert set(memories) == {m["id"] for m in stored}  # summary memories are not exported
    for memory in stored:
        record = memories[memory["id"]]
        for key in ("content", "tags", "source_type", "source_instance", "context"):
            assert record[key] == memory[key], key
        assert record["created_at"] == memory["created_at"]
        assert record["episode_id"] == memory["episode_id"]
        assert "vector" not in record
    thread_ids = [m["id"] for m in stored[:3]]
    episode = next(e for e in episodes if set(thread_ids) <= set(e["memory_ids"]))
    assert all(memories[mid]["episode_id"] == episode["id"] for mid in thread_ids)
    assert episode["summary"] and episode["status"] == "active"

    later = lines(client.get("/v1/export", params={"since": "2025-03-03T11:00:00Z"}).text)
    assert {r["id"] for r in later if r["type"] == "memory"} == {m["id"] for m in stored[2:]}
    with_vectors = lines(client.get("/v1/export", params={"vectors": "true"}).text)
    assert with_vectors[0]["vectors"] is True
    assert all(len(r["vector"]) == 384 for r in with_vectors if r["type"] == "memory")
    assert client.get("/v1/export", params={"since": "soon"}).status_code == 400
    assert client.get("/v1/export", params={"sincе": "x"}).status_code == 400


def test_import_is_validated_first_then_idempotent_by_id(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = store_some(client)
    fix = {"memory_id": stored[3]["id"], "content": "The coffee machine is descaled on Mondays"}
    correction = client.post("/v1/correct", json=fix).json()["memory_id"]
    settle(client)
    stored = [client.get(f"/v1/memory/{m['id']}").json() for m in stored]
    stored.append(client.get(f"/v1/memory/{correction}").json())
    assert stored[3]["superseded_by"] == correction
    export = client.get("/v1/export", params={"vectors": "true"}).text

    other = tmp_path / "other"
    monkeypatch.setenv("TRIBAL_MEMORY_HOME", str(other))
    config = load_config(write_config(other, episodes=EPISODES))
    from tribalmemory.interfaces.http import create_app

    with TestClient(create_app(config), base_url=str(client.base_url)) as fresh:
        bad = export.splitlines()
        at = next(i for i, line in enumerate(bad) if '"created_at":"2025' in line)
        bad[at] = bad[at].replace('"created_at":"2025', '"created_at":"later-2025')
        refused = fresh.post("/v1/import", headers=NDJSON, content="\n".join(bad).encode())
        assert refused.status_code == 422
        assert refused.json()["error"] == "1 problem in the file; nothing was imported"
        assert refused.json()["detail"][0].startswith(f"line {at + 1}: created_at")
        assert fresh.get("/v1/stats").json()["total_memories"] == 0
        cut = "\n".join(export.splitlines()[:-1]).encode()  # e.g. a dropped connection
        short = fresh.post("/v1/import", headers=NDJSON, content=cut)
        assert short.status_code == 422
        assert short.json()["detail"] == [
            "the file ends without its end line: the export was cut short"
        ]
        plain = {"Content-Type": "text/plain"}  # what a web page may send cross-origin
        assert fresh.post("/v1/import", headers=plain, content=export.encode()).status_code == 415

        planned = fresh.post(
            "/v1/import", headers=NDJSON, params={"dry_run": "true"}, content=export.encode()
        )
        assert planned.json() == {
            "memories": 5,
            "episodes": 1,
            "new": 5,
            "existing": 0,
            "repeated": 0,
            "stored": 0,
            "vectors_used": True,
            "dry_run": True,
            "episodes_new": 1,
            "episodes_existing": 0,
            "episodes_created": 0,
            "causes": 0,
            "causes_created": 0,
            "causes_existing": 0,
            "causes_skipped": {},
        }
        assert fresh.get("/v1/stats").json()["total_memories"] == 0
        done = fresh.post("/v1/import", headers=NDJSON, content=export.encode()).json()
        assert done["stored"] == 5 and done["dry_run"] is False
        settle(fresh)
        for memory in stored:
            got = fresh.get(f"/v1/memory/{memory['id']}").json()
            keys = ("content", "tags", "source_type", "source_instance", "created_at")
            for key in (*keys, "supersedes", "superseded_by"):
                assert got[key] == memory[key], key
        # Every imported memory is placed (none left pending): the episode's members by the
        # import, the others by the engine (see the test below for the episodes themselves).
        for memory in stored:
            got = fresh.get(f"/v1/memory/{memory['id']}").json()
            assert got["episode_status"] != "pending", got
        again = fresh.post("/v1/import", headers=NDJSON, content=export.encode()).json()
        assert again["stored"] == 0 and again["existing"] == 5
        counts = fresh.get("/v1/stats").json()
        assert counts["by_source_type"]["USER_EXPLICIT"] == 4
        assert counts["by_source_type"]["CORRECTION"] == 1


def on_disk(folder: Path) -> int:
    """Bytes the files under ``folder`` take on disk."""
    return sum(allocated(path) for path in folder.rglob("*") if path.is_file())


def test_copy_sparse_writes_the_data_and_leaves_the_holes(tmp_path: Path) -> None:
    mib = 1 << 20
    source = tmp_path / "source"
    with source.open("wb") as handle:
        for offset, data in ((0, b"head"), (20 * mib, b"middle" * 1000), (40 * mib, bytes(mib))):
            handle.seek(offset)
            handle.write(data)
        handle.seek(64 * mib - 4)
        handle.write(b"tail")
    if allocated(source) >= 32 * mib:
        pytest.skip("this filesystem does not keep holes")
    copied = Path(copy_sparse(source, tmp_path / "copy"))
    assert copied.read_bytes() == source.read_bytes()
    assert copied.stat().st_mtime == source.stat().st_mtime
    # three islands of data of at most 6 KB, each in blocks of the filesystem (4 KB here;
    # 64 KB leaves room for 16 KB blocks); the MB of zeros written as data is a hole now
    assert allocated(copied) <= 64 * 1024 < allocated(source)


def test_backup_while_running_then_restore_into_an_empty_folder(
    client: TestClient, tmp_path: Path, app_config: Any
) -> None:
    stored = store_some(client)
    target = tmp_path / "backup"
    made = client.post("/v1/backup", json={"path": str(target)})
    assert made.status_code == 200, made.text
    assert made.json()["memories"] == client.get("/v1/stats").json()["total_memories"]
    databases = {"episodes.sqlite3", "ledger.sqlite3", "access.sqlite3"}
    assert set(made.json()["files"]) >= {"store", *databases}
    # the store's files are sparse (tens of MB mapped, KB written): the copy keeps the holes
    # (it took 270 MB for a store of three memories that took 0.7 MB)
    assert on_disk(target / "store") <= on_disk(app_config.store_path)
    again = client.post("/v1/backup", json={"path": str(target)})
    assert again.status_code == 409 and "not empty" in again.json()["error"]
    assert client.post("/v1/backup", json={"path": "relative"}).status_code == 422
    inside = client.post("/v1/backup", json={"path": str(app_config.data_path / "copy")})
    assert inside.status_code == 422 and "inside the data folder" in inside.json()["error"]
    assert client.post("/v1/backup", json={"dir": str(tmp_path)}).status_code == 422
    episodes_before = client.get("/v1/episodes").json()["episodes"]

    home = tmp_path / "restored"
    config_path = write_config(home, episodes=EPISODES)
    code = main(["restore", str(target), "--config", str(config_path), "--json"])
    assert code == 0
    assert main(["restore", str(target), "--config", str(config_path)]) == 1  # not empty now
    stale = home / "episodes.sqlite3-intents"  # the log of the database being replaced
    stale.write_text('["a memory the backup never held", 1.0]\n')
    assert main(["restore", str(target), "--config", str(config_path), "--force"]) == 0
    assert not stale.exists()
    assert on_disk(load_config(config_path).store_path) <= on_disk(target / "store")

    async def reopened() -> tuple[list[Any], list[Any]]:
        runtime = await start_runtime(load_config(config_path))
        try:
            got = [await runtime.api.get_memory(m["id"]) for m in stored]
            listed = (await runtime.api.episodes_list())["episodes"]
            return got, listed
        finally:
            await runtime.stop()

    got, listed = asyncio.run(reopened())
    assert [(g["id"], g["content"], g["episode_id"]) for g in got] == [
        (m["id"], m["content"], m["episode_id"]) for m in stored
    ]
    assert [(e["id"], e["memory_count"]) for e in listed] == [
        (e["id"], e["memory_count"]) for e in episodes_before
    ]


# -- the CLI, in local mode and against a running daemon -------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_export_import_locally_and_through_the_daemon(
    daemon: Any, tm_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkey = pytest.MonkeyPatch()
    try:
        monkey.setenv("TRIBAL_MEMORY_HOME", str(daemon.home))
        texts = [unique("Billing exports run at 02:00 UTC"), unique("Invoices go to S3 bucket x")]
        ids = []
        for text in texts:
            code, out, _ = run(
                capsys,
                "remember",
                text,
                "--tag",
                "billing",
                "--json",
                "--config",
                str(daemon.config_path),
            )
            assert code == 0
            ids.append(json.loads(out)["memory_id"])
        code, exported, err = run(capsys, "export", "--config", str(daemon.config_path))
        assert code == 0 and err == ""  # not a terminal: no progress bar
        records = lines(exported)
        by_id = {r["id"]: r for r in records if r["type"] == "memory"}
        assert {by_id[i]["content"] for i in ids} == set(texts)
        assert records[0]["vectors"] is False
        again = tmp_path / "again.jsonl"
        again.write_text(exported, encoding="utf-8")
        code, out, _ = run(
            capsys, "import", str(again), "--json", "--config", str(daemon.config_path)
        )
        assert code == 0 and json.loads(out)["stored"] == 0  # all there: nothing added
        assert json.loads(out)["existing"] == len(by_id)
    finally:
        monkey.undo()

    local = write_config(tm_home, episodes={"enabled": False})
    file = tmp_path / "export.jsonl"
    file.write_text(exported, encoding="utf-8")
    code, out, err = run(capsys, "import", str(file), "--dry-run", "--config", str(local))
    assert code == 0 and err == ""
    total = len(by_id)
    assert out.strip() == (
        f"Would import {total} new memories (0 already stored, {total} in the file, "
        "embedding them); 0 episodes to recreate (0 already stored, 0 in the file)"
    )
    code, out, _ = run(capsys, "import", str(file), "--config", str(local))
    assert code == 0 and out.startswith(f"Imported {total} new memories")
    code, out, _ = run(capsys, "recall", texts[0], "--json", "--config", str(local))
    assert json.loads(out)["results"][0]["memory_id"] == ids[0]
    broken = tmp_path / "broken.jsonl"
    broken.write_text(exported.splitlines()[0] + "\n{not json\n", encoding="utf-8")
    code, _, err = run(capsys, "import", str(broken), "--config", str(local))
    assert code == 1 and "2 problems in the file; nothing was imported" in err
    assert "line 2: is not valid JSON" in err and "the export was cut short" in err


def test_backup_through_the_daemon_during_writes_restores_what_it_counted(
    daemon: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Writers keep storing while the CLI asks the daemon for a backup: the copy holds exactly
    the memories its manifest counts and opens cleanly; the writers never see an error."""
    import threading

    import httpx

    stop = threading.Event()
    stored = threading.Event()  # the backup starts once the writers have stored something
    failures: list[str] = []

    def writer() -> None:
        with httpx.Client(base_url=daemon.url, timeout=30, trust_env=False) as http:
            while not stop.is_set():
                answer = http.post("/v1/remember", json={"content": unique("written meanwhile")})
                if answer.status_code != 200:
                    failures.append(answer.text)
                else:
                    stored.set()

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        assert stored.wait(60), f"no write was acknowledged: {failures[:1]}"
        target = tmp_path / "during"
        monkey = pytest.MonkeyPatch()
        monkey.setenv("TRIBAL_MEMORY_HOME", str(daemon.home))
        try:
            code, out, err = run(
                capsys, "backup", str(target), "--json", "--config", str(daemon.config_path)
            )
            refused = run(
                capsys, "restore", str(target), "--force", "--config", str(daemon.config_path)
            )
        finally:
            monkey.undo()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert code == 0, err
    assert failures == []
    assert refused[0] == 2 and "a daemon is running on this data folder" in refused[2]
    counted = json.loads(out)["memories"]
    home = tmp_path / "restored"
    config_path = write_config(home, episodes={"enabled": False})
    assert main(["restore", str(target), "--config", str(config_path)]) == 0

    async def total() -> int:
        runtime = await start_runtime(load_config(config_path))
        try:
            return int((await runtime.api.stats())["total_memories"])
        finally:
            await runtime.stop()

    assert asyncio.run(total()) == counted > 0


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bars_only_at_a_terminal_and_never_with_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tribalmemory.portability.progress import bar, wanted

    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    assert wanted(False) is True and wanted(True) is False
    with bar("import", 4, wanted(False)) as advance:
        advance(1)
        advance(3)
    drawn = screen.getvalue()
    assert "import" in drawn and "4/4" in drawn  # count done / expected, after the last step
    monkeypatch.setattr("sys.stderr", io.StringIO())  # a pipe or a file: nothing drawn
    assert wanted(False) is False


def episodes_of(client: TestClient) -> dict[str, dict[str, Any]]:
    """Every episode (any status) with its member ids and history, by id (without access
    statistics)."""
    from tribalmemory.portability.records import ACCESS_FIELDS

    listed = client.get("/v1/episodes", params={"limit": 100}).json()["episodes"]
    out = {e["id"]: client.get(f"/v1/episodes/{e['id']}").json() for e in listed}
    for detail in out.values():  # reading changes them: not part of what is compared
        for key in ACCESS_FIELDS:
            detail["episode"].pop(key, None)
    return out


def test_import_recreates_the_exported_episodes_without_detection(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = store_some(client)
    thread = stored[0]["episode_id"]
    assert thread and all(m["episode_id"] == thread for m in stored[:3])
    # A second episode, made by hand, chained to the thread: a chain link and a user title.
    child = client.post(
        "/v1/episodes",
        json={
            "title": "Coffee machine care",
            "memory_ids": [stored[3]["id"]],
            "parent_episode_id": thread,
        },
    )
    assert child.status_code == 200, child.text
    client.post(f"/v1/episodes/{thread}/close")
    settle(client)
    before = episodes_of(client)
    assert len(before) == 2
    export = client.get("/v1/export", params={"vectors": "true"}).text

    other = tmp_path / "other"
    monkeypatch.setenv("TRIBAL_MEMORY_HOME", str(other))
    config = load_config(write_config(other, episodes=EPISODES))
    from tribalmemory.interfaces.http import create_app

    with TestClient(create_app(config), base_url=str(client.base_url)) as fresh:
        bad = export.splitlines()
        at = next(i for i, line in enumerate(bad) if line.startswith('{"type":"episode"'))
        bad[at] = bad[at].replace('"status":"', '"status":"sleeping-', 1)
        refused = fresh.post("/v1/import", headers=NDJSON, content="\n".join(bad).encode())
        assert refused.status_code == 422
        status = json.loads(bad[at])["status"]
        assert refused.json()["detail"] == [
            f"line {at + 1}: status must be one of active, closed, archived, got {status!r}"
        ]
        twice = export.splitlines()
        episode_lines = [i for i, line in enumerate(twice) if line.startswith('{"type":"episode"')]
        first, second = (json.loads(twice[i]) for i in episode_lines)
        second["memory_ids"].append(first["memory_ids"][0])
        twice[episode_lines[1]] = json.dumps(second)
        refused = fresh.post("/v1/import", headers=NDJSON, content="\n".join(twice).encode())
        assert refused.status_code == 422
        assert refused.json()["detail"][0].startswith(
            f"line {episode_lines[1] + 1}: memory {first['memory_ids'][0]} is in the episode of "
            f"line {episode_lines[0] + 1} already"
        )
        newer = export.splitlines()
        newer[0] = json.dumps(json.loads(newer[0]) | {"version": 2})
        refused = fresh.post("/v1/import", headers=NDJSON, content="\n".join(newer).encode())
        assert refused.status_code == 422
        assert "line 1: an export of format version 2, from a newer tribalmemory" in str(
            refused.json()
        )
        ahead = export.splitlines()
        first_memory = next(i for i, line in enumerate(ahead) if '"type":"memory"' in line)
        first_episode = next(i for i, line in enumerate(ahead) if '"type":"episode"' in line)
        for at, field in ((first_memory, "updated_at"), (first_episode, "closed_at")):
            ahead[at] = json.dumps(json.loads(ahead[at]) | {field: "2099-01-01T00:00:00Z"})
        refused = fresh.post("/v1/import", headers=NDJSON, content="\n".join(ahead).encode())
        assert refused.status_code == 422
        assert [d.split(" is ")[0] for d in refused.json()["detail"]] == [
            f"line {first_memory + 1}: updated_at 2099-01-01T00:00:00Z",
            f"line {first_episode + 1}: closed_at 2099-01-01T00:00:00Z",
        ]
        duplicated = export.splitlines()
        memory_at = [i for i, line in enumerate(duplicated) if '"type":"memory"' in line]
        changed = json.loads(duplicated[memory_at[0]]) | {"content": "another text, same id"}
        duplicated.insert(memory_at[-1] + 1, json.dumps(changed))
        refused = fresh.post("/v1/import", headers=NDJSON, content="\n".join(duplicated).encode())
        assert refused.status_code == 422
        memory_id = changed["id"]
        assert (
            f"line {memory_at[-1] + 2}: memory {memory_id} is on line {memory_at[0] + 1} "
            "already (an export holds each memory once)"
        ) in refused.json()["detail"]
        assert fresh.get("/v1/stats").json()["total_memories"] == 0
        planned = fresh.post(
            "/v1/import", headers=NDJSON, params={"dry_run": "true"}, content=export.encode()
        ).json()
        assert (planned["episodes_new"], planned["episodes_existing"]) == (2, 0)
        assert planned["episodes_created"] == 0 and fresh.get("/v1/episodes").json()["count"] == 0
        done = fresh.post("/v1/import", headers=NDJSON, content=export.encode()).json()
        assert (done["stored"], done["episodes_created"]) == (4, 2), done
        runtime = fresh.app.state.runtime  # type: ignore[attr-defined]
        # Members were joined by the import, not detected: no detect job was ever queued.
        assert runtime.episodes.store.jobs.count("detect") == 0
        # Nor summarised again (the summary job is what calls the LLM): none is queued.
        assert runtime.episodes.store.jobs.count("summary") == 0
        settle(fresh)
        after = episodes_of(fresh)
        assert set(after) == set(before)
        for eid, old in before.items():
            new = after[eid]
            assert new["memory_ids"] == old["memory_ids"]
            keys = ("title", "title_source", "status", "summary", "summary_kind", "closed_at")
            for key in (*keys, "parent_episode_id", "summary_memory_id", "structured"):
                assert new["episode"][key] == old["episode"][key], (eid, key)
            # The exported history, then one entry for the import itself.
            assert new["history"][: len(old["history"])] == old["history"]
            assert new["history"][-1]["action"] == "imported"
        assert after[child.json()["episode_id"]]["episode"]["parent_episode_id"] == thread
        for memory in stored:
            got = fresh.get(f"/v1/memory/{memory['id']}").json()
            assert got["episode_id"] == next(
                e for e, d in after.items() if memory["id"] in d["memory_ids"]
            )
        # The summary is the EPISODE_SUMMARY memory again: recall finds it.
        summary_id = after[thread]["episode"]["summary_memory_id"]
        found = fresh.post(
            "/v1/recall",
            json={"query": after[thread]["episode"]["title"], "source_types": ["EPISODE_SUMMARY"]},
        ).json()
        assert summary_id in [r["memory"]["id"] for r in found["results"]], found

        again = fresh.post("/v1/import", headers=NDJSON, content=export.encode()).json()
        assert (again["stored"], again["episodes_created"], again["episodes_existing"]) == (0, 0, 2)
        assert episodes_of(fresh) == after


def test_new_memories_of_an_episode_imported_before_go_through_detection(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A later export of the same episode (one memory more): the episode exists, so the new
    memory is not taken as placed by the import; the engine's detection places it."""
    stored = store_some(client)
    export = client.get("/v1/export", params={"vectors": "true"}).text
    late = stored[2]["id"]
    earlier = []
    for line in export.splitlines():
        record = json.loads(line)
        if record["type"] == "memory" and record["id"] == late:
            continue
        if record["type"] == "episode":
            record["memory_ids"] = [m for m in record["memory_ids"] if m != late]
            record["structured"] = None  # it cites the memory left out
        if record["type"] == "end":
            record["memories"] -= 1
        earlier.append(json.dumps(record))

    other = tmp_path / "other"
    monkeypatch.setenv("TRIBAL_MEMORY_HOME", str(other))
    config = load_config(write_config(other, episodes=EPISODES))
    from tribalmemory.interfaces.http import create_app

    with TestClient(create_app(config), base_url=str(client.base_url)) as fresh:
        first = fresh.post("/v1/import", headers=NDJSON, content="\n".join(earlier).encode())
        assert first.status_code == 200 and first.json()["episodes_created"] == 1, first.text
        runtime = fresh.app.state.runtime  # type: ignore[attr-defined]
        assert runtime.episodes.store.detections.get(late) is None
        second = fresh.post("/v1/import", headers=NDJSON, content=export.encode()).json()
        assert (second["stored"], second["episodes_existing"]) == (1, 1), second
        settle(fresh)
        assert runtime.episodes.store.detections.get(late) is not None  # detection saw it
        assert fresh.get(f"/v1/memory/{late}").json()["episode_status"] != "pending"


def test_an_import_cut_after_the_memories_is_completed_by_importing_again(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state a kill leaves between storing an episode's memories (without hooks) and
    recreating the episode: the next import of the same file recreates it with them."""
    stored = store_some(client)
    export = client.get("/v1/export", params={"vectors": "true"}).text
    episode = next(json.loads(x) for x in export.splitlines() if '"type":"episode"' in x)
    vectors = {
        r["id"]: r["vector"] for r in map(json.loads, export.splitlines()) if r["type"] == "memory"
    }

    other = tmp_path / "other"
    monkeypatch.setenv("TRIBAL_MEMORY_HOME", str(other))
    config = load_config(write_config(other, episodes=EPISODES))
    from tribalmemory.interfaces.http import create_app
    from tribalmemory.models import Memory

    with TestClient(create_app(config), base_url=str(client.base_url)) as fresh:
        runtime = fresh.app.state.runtime  # type: ignore[attr-defined]
        assert fresh.portal is not None
        for memory in stored:
            if memory["id"] in episode["memory_ids"]:
                as_stored = Memory.from_json(client.get(f"/v1/memory/{memory['id']}").json())
                store = runtime.service.import_memory
                assert fresh.portal.call(store, as_stored, vectors[memory["id"]], True)
        assert fresh.get("/v1/episodes").json()["count"] == 0
        done = fresh.post("/v1/import", headers=NDJSON, content=export.encode()).json()
        assert (done["existing"], done["episodes_created"]) == (3, 1), done
        got = fresh.get(f"/v1/episodes/{episode['id']}").json()
        assert got["memory_ids"] == episode["memory_ids"]


def test_a_recreated_episode_is_in_its_members_project() -> None:
    """The row of an imported episode takes its members' project (an episode never spans
    two), also from a file written before episodes carried one."""
    from datetime import UTC, datetime

    from tribalmemory.episodes.restore import episode_row
    from tribalmemory.models import Memory, SourceType

    at = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
    member = Memory("m1", "text", SourceType.USER_EXPLICIT, "x", [], None, at, at, project="alpha")
    record = {
        "id": "ep-0123456789ab",
        "title": "T",
        "title_source": "user",
        "created_at": at.timestamp(),
        "summary": "S",
        "summary_kind": "extractive",
        "summary_memory_id": None,
        "status": "closed",
        "updated_at": at.timestamp(),
        "closed_at": at.timestamp(),
        "last_activity": at.timestamp(),
        "metadata": {},
        "structured": {},
    }
    assert episode_row(record, [member], None).project == "alpha"
    assert episode_row({**record, "project": "beta"}, [], None).project == "beta"
    assert episode_row(record, [], None).project == "default"


def test_a_vector_must_be_finite_numbers_of_the_header_dimension() -> None:
    from tribalmemory.errors import TribalError
    from tribalmemory.portability.records import Header, parse_memory

    head = Header(BUNDLED_MODEL, 4, True)
    line = {
        "type": "memory",
        "id": "0b4f2a8e-5a3e-4c1f-9d0e-2a6b7c8d9e0f",
        "content": "a memory",
        "source_type": "AUTO_CAPTURE",
        "source_instance": "x",
        "tags": [],
        "context": None,
        "created_at": "2025-03-03T09:00:00Z",
        "updated_at": "2025-03-03T09:00:00Z",
        "metadata": {},
    }
    assert parse_memory({**line, "vector": [0.5, 1, -2.0, 0.0]}, 2, head, 1000).vector
    beyond_float32 = ([0.5, 1e308, 0.1, 0.2], [0.5, 1e20, 0.1, 0.2], [10**400, 0.5, 0.1, 0.2])
    for bad in (
        [0.5, True, 0.1, 0.2],
        [0.5, float("nan"), 0.1, 0.2],
        [0.5, float("inf"), 0.1, 0.2],
        [0.5, "1", 0.1, 0.2],
        [0.5],
        *beyond_float32,
    ):
        with pytest.raises(TribalError, match="line 2: vector must be 4 finite numbers"):
            parse_memory({**line, "vector": bad}, 2, head, 1000)


def import_file(head: dict[str, Any], *memories: dict[str, Any]) -> str:
    """An export file: ``head``, a memory line for each of ``memories`` (fields over a plain
    memory of 3 March 2025) and the end line."""
    from tribalmemory.portability import records

    base = {
        "type": "memory",
        "content": "Deploys are frozen during the quarter-end close",
        "source_type": "USER_EXPLICIT",
        "source_instance": "claude-code",
        "tags": [],
        "context": None,
        "created_at": "2025-03-03T12:00:00Z",
        "updated_at": "2025-03-03T12:00:00Z",
        "metadata": {},
    }
    body = [
        {**base, "id": str(uuid.uuid4()), "content": unique(base["content"]), **fields}
        for fields in memories
    ]
    out = [records.dumps(head), *map(records.dumps, body)]
    return "".join(out) + records.dumps(records.end(len(body), 0))


def export_header(client: TestClient) -> dict[str, Any]:
    return lines(client.get("/v1/export", params={"vectors": "true"}).text)[0]


def test_an_import_line_dated_in_the_future_is_refused_and_closes_nothing(
    client: TestClient,
) -> None:
    """A memory's time decides which episodes are idle: one dated 9999 would close every
    active episode. The import refuses it as ``remember`` does, naming the line."""
    stored = store_some(client)
    episode_id = stored[0]["episode_id"]
    assert client.get(f"/v1/episodes/{episode_id}").json()["episode"]["status"] == "active"
    before = client.get("/v1/stats").json()["total_memories"]
    file = import_file(export_header(client), {}, {"created_at": "9999-01-01T00:00:00Z"})
    refused = client.post("/v1/import", headers=NDJSON, content=file.encode())
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"] == "1 problem in the file; nothing was imported"
    [problem] = refused.json()["detail"]
    assert problem.startswith("line 3: created_at 9999-01-01T00:00:00Z is "), problem
    assert "in the future" in problem and "at most 5 minutes ahead" in problem
    assert "Correct the line's created_at." in problem
    settle(client)
    assert client.get("/v1/stats").json()["total_memories"] == before
    assert client.get(f"/v1/episodes/{episode_id}").json()["episode"]["status"] == "active"


def test_an_import_vector_beyond_float32_is_refused_with_its_line(client: TestClient) -> None:
    """Numbers JSON and float64 hold but the store's float32 vectors do not (1e308, or a
    vector whose length overflows) are the file's fault: 422 naming the line, not a 500."""
    head = export_header(client)
    dim = head["dim"]
    assert head["vectors"] is True
    ok = [1.0 / dim**0.5] * dim
    for bad in ([1e308] * dim, [1e30] * dim, [10**400] + [0.0] * (dim - 1)):
        file = import_file(head, {"vector": ok}, {"vector": bad})
        refused = client.post("/v1/import", headers=NDJSON, content=file.encode())
        assert refused.status_code == 422, refused.text
        assert refused.json()["detail"] == [
            f"line 3: vector must be {dim} finite numbers within float32's range "
            "(header vectors: true)"
        ]
    assert client.get("/v1/stats").json()["total_memories"] == 0
    file = import_file(head, {"vector": ok})
    assert client.post("/v1/import", headers=NDJSON, content=file.encode()).json()["stored"] == 1


def test_cli_import_names_the_line_dated_in_the_future(
    daemon: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the running daemon, as a user runs it: the CLI says which line and why."""
    from tribalmemory.portability import records

    head = records.header("any-model", 384, "2025-03-20T00:00:00Z", None, False)
    file = tmp_path / "future.jsonl"
    file.write_text(import_file(head, {"created_at": "9999-01-01T00:00:00Z"}), encoding="utf-8")
    code, out, err = run(capsys, "import", str(file), "--config", str(daemon.config_path))
    assert code == 1 and out == ""
    assert "1 problem in the file; nothing was imported" in err
    assert "line 2: created_at 9999-01-01T00:00:00Z is " in err and "in the future" in err


def test_an_import_stopped_by_ctrl_c_says_how_to_finish_it(
    tm_home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C once the first page is stored: exit 130 and a line saying that what was stored
    stays and that the same command imports the rest; run again, it stores only the rest."""
    from contextlib import contextmanager

    from tribalmemory.cli import portability as cli_portability
    from tribalmemory.portability import records
    from tribalmemory.portability.importer import PAGE

    head = records.header("any-model", 384, "2025-03-20T00:00:00Z", None, False)
    file = tmp_path / "two-pages.jsonl"
    file.write_text(import_file(head, *([{}] * (PAGE + 1))), encoding="utf-8")
    config = str(write_config(tm_home, episodes={"enabled": False}))

    @contextmanager
    def ctrl_c_after_a_page(label: str, total: int | None, show: bool) -> Any:
        def advance(n: int, total: int | None = None) -> None:
            raise KeyboardInterrupt  # as SIGINT would, right after the page's durable write

        yield advance

    monkeypatch.setattr(cli_portability, "bar", ctrl_c_after_a_page)
    code, out, err = run(capsys, "import", str(file), "--config", config)
    assert (code, out) == (130, "")
    assert err == (
        "tribalmemory: import interrupted; what it stored is kept. Run the same command again "
        "to import the rest: what is stored already is skipped\n"
    )
    monkeypatch.undo()
    code, out, _ = run(capsys, "import", str(file), "--json", "--config", config)
    assert code == 0 and (json.loads(out)["existing"], json.loads(out)["stored"]) == (PAGE, 1)


def test_the_import_line_says_one_memory_and_one_episode() -> None:
    """Issue 40.10: counts of one were "1 new memories", "1 episodes"."""
    from tribalmemory.cli.portability import describe

    report = {
        "dry_run": False,
        "stored": 1,
        "existing": 0,
        "memories": 1,
        "vectors_used": True,
        "episodes_created": 1,
        "episodes_existing": 0,
        "episodes": 1,
    }
    assert describe(report) == (
        "Imported 1 new memory (0 already stored, 1 in the file, their vectors); "
        "1 episode recreated (0 already stored, 1 in the file)"
    )
    dry = describe(report | {"dry_run": True, "new": 2, "episodes_new": 0})
    assert dry.startswith("Would import 2 new memories (") and "; 0 episodes to recreate" in dry
    # nothing new: nothing embedded, nor said to be
    again = report | {"stored": 0, "existing": 1, "vectors_used": False, "episodes_created": 0}
    assert describe(again).startswith("Imported 0 new memories (1 already stored, 1 in the file);")
    doubled = report | {"memories": 2, "repeated": 1}  # a plain line written twice
    assert describe(doubled).startswith("Imported 1 new memory (0 already stored, 1 repeated, 2 in")
    # A user's causal links, when the file has any (an older daemon's answer counts none).
    links = {"causes": 2, "causes_created": 1, "causes_existing": 0}
    skipped = {"causes_skipped": {"node not in the import": 1}}
    assert describe(report | links | skipped).endswith(
        "; 1 causal link restored (0 already stored, 1 skipped: node not in the import, "
        "2 in the file)"
    )
    assert describe(report | links | {"dry_run": True, "new": 1, "episodes_new": 0}).endswith(
        "; 2 causal links in the file"
    )


def test_an_export_that_cannot_be_written_says_so_without_a_traceback(
    daemon: Any, tmp_path: Path
) -> None:
    """A full disk (``/dev/full``) and a reader that goes away (``| head -1``), through the
    daemon; locally too for the full disk."""
    import subprocess
    import sys

    from helpers_http import subprocess_env

    env = subprocess_env(daemon.home, tmp_path)
    for i in range(25):  # with their vectors, more than a pipe holds (64 KB)
        text = unique(f"Invoice batch {i} goes to the finance bucket.")
        assert main(["remember", text, "--config", str(daemon.config_path)]) == 0
    export = [sys.executable, "-m", "tribalmemory", "export", "--config"]
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [*export, str(daemon.config_path)], stdout=full, stderr=subprocess.PIPE, env=env
        )
    assert done.returncode == 1 and b"cannot write the export (No space left" in done.stderr
    assert b"Traceback" not in done.stderr
    piped = subprocess.run(
        f"{' '.join(export)} {daemon.config_path} --vectors | head -c 10",
        shell=True,
        capture_output=True,
        env=env,
    )
    assert piped.returncode == 0 and len(piped.stdout) == 10
    assert b"Traceback" not in piped.stderr and b"error" not in piped.stderr.lower()
    local = write_config(tmp_path / "local", episodes={"enabled": False})
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [*export, str(local)], stdout=full, stderr=subprocess.PIPE, env=env, timeout=120
        )
    assert done.returncode == 1 and b"cannot write the export" in done.stderr, done.stderr


def test_cli_import_names_a_missing_file_and_a_folder(
    tm_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(write_config(tm_home, episodes={"enabled": False}))
    code, _, err = run(capsys, "import", str(tmp_path / "gone.jsonl"), "--config", config)
    assert code == 1 and "gone.jsonl: no such file" in err
    code, _, err = run(capsys, "import", str(tmp_path), "--config", config)
    assert code == 1 and "is not a file" in err
