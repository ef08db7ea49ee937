"""Restore checks the whole backup before it touches the data folder, never writes outside
the files a backup holds, and never runs beside the daemon that holds the store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers_http import free_port, start_daemon, write_config

from tribalmemory.cli.main import main
from tribalmemory.config import config_from_dict
from tribalmemory.datafolder import ensure_identity
from tribalmemory.errors import InvalidInput
from tribalmemory.portability.backup import backup, read_manifest, restore
from tribalmemory.runtime import start_runtime
from tribalmemory.storage.base import StoreLockedError
from tribalmemory.storage.edge.folder import LOCK_FILE, FolderLock


def config_of(data: Path) -> Any:
    return config_from_dict({"data_dir": str(data), "episodes": {"enabled": False}})


async def backed_up(tmp_path: Path, *texts: str) -> tuple[Path, list[str]]:
    """A backup of a data folder holding ``texts``, and their ids."""
    runtime = await start_runtime(config_of(tmp_path / "source"), run_scheduler=False)
    try:
        ids = [(await runtime.api.remember(text))["memory_id"] for text in texts]
        await backup(runtime.config, runtime.service, tmp_path / "backup")
    finally:
        await runtime.stop()
    return tmp_path / "backup", ids


async def contents(data: Path) -> list[str]:
    runtime = await start_runtime(config_of(data), run_scheduler=False)
    try:
        return sorted(m["content"] for m in (await runtime.api.memories_list())["memories"])
    finally:
        await runtime.stop()


def edit_manifest(folder: Path, **changes: Any) -> None:
    path = folder / "backup.json"
    manifest = json.loads(path.read_text()) | changes
    path.write_text(json.dumps({k: v for k, v in manifest.items() if v is not ...}))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"files": ["store", "config.yaml"]}, "'config.yaml' is not a file a backup writes"),
        ({"files": ["store", "../victim.txt"]}, "'../victim.txt' is not a file a backup"),
        ({"files": ["store", "/etc/passwd"]}, "'/etc/passwd' is not a file a backup writes"),
        ({"files": ["store", "store"]}, "or is listed twice"),
        ({"files": None}, "files must be the list of the files backed up"),
        ({"files": ...}, "files must be the list of the files backed up"),
        ({"files": "store"}, "files must be the list of the files backed up"),
        ({"memories": "many"}, "memories must be a count"),
        ({"version": 2}, "format version 2"),
    ],
)
async def test_a_manifest_naming_other_files_or_versions_is_refused_before_any_change(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    source, _ = await backed_up(tmp_path, "The payroll export runs on the 25th.")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yaml").write_text("server:\n  port: 18999\n")
    edit_manifest(source, **changes)
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        restore(source, config_of(data), force=True)
    assert victim.read_text() == "keep me"
    assert (data / "config.yaml").read_text() == "server:\n  port: 18999\n"
    assert not (data / "store").exists()


async def test_a_backup_missing_a_file_leaves_the_data_folder_as_it_was(tmp_path: Path) -> None:
    source, _ = await backed_up(tmp_path, "Invoices go to the finance bucket.")
    data = tmp_path / "data"
    before, _ = await backed_up(tmp_path / "other", "Deploys go out on Tuesdays.")
    restore(before, config_of(data), force=False)
    listed = read_manifest(source)["files"]
    assert listed[0] == "store" and listed[-1] != "store"
    (source / listed[-1]).unlink()  # the last one: every other would be copied first
    with pytest.raises(InvalidInput, match=f"lists {listed[-1]}, which is missing"):
        restore(source, config_of(data), force=True)
    assert await contents(data) == ["Deploys go out on Tuesdays."]  # nothing was removed
    assert not [p.name for p in data.iterdir() if p.name.startswith((".restore-", ".replaced-"))]


async def test_a_forced_restore_replaces_the_data_and_leaves_nothing_behind(
    tmp_path: Path,
) -> None:
    source, _ = await backed_up(tmp_path, "Invoices go to the finance bucket.")
    data = tmp_path / "data"
    old, _ = await backed_up(tmp_path / "other", "Deploys go out on Tuesdays.")
    restore(old, config_of(data), force=False)
    result = restore(source, config_of(data), force=True)
    assert result["memories"] == 1
    assert await contents(data) == ["Invoices go to the finance bucket."]
    assert not [p.name for p in data.iterdir() if p.name.startswith((".restore-", ".replaced-"))]


async def test_a_restored_copy_does_not_take_the_identity_of_the_folder_backed_up(
    tmp_path: Path,
) -> None:
    """A client checks that the daemon on its port proves the identity of the client's own data
    folder: a copy restored beside the original, sharing its identity, could answer for it. A
    backup leaves the identity out, and a restore leaves out the one an older backup holds."""
    original = ensure_identity(tmp_path / "source")
    source, _ = await backed_up(tmp_path, "Invoices go to the finance bucket.")
    assert "identity.json" not in read_manifest(source)["files"]
    assert not (source / "identity.json").exists()
    # as a backup of an earlier version holds it
    shutil.copy2(tmp_path / "source" / "identity.json", source / "identity.json")
    edit_manifest(source, files=[*read_manifest(source)["files"], "identity.json"])
    copy = tmp_path / "copy"
    result = restore(source, config_of(copy), force=False)
    assert "identity.json" not in result["restored"]
    assert not (copy / "identity.json").exists()
    assert ensure_identity(copy).secret != original.secret  # its own, made at first use
    assert await contents(copy) == ["Invoices go to the finance bucket."]


async def test_restore_refuses_a_store_held_by_another_process(tmp_path: Path) -> None:
    source, _ = await backed_up(tmp_path, "Invoices go to the finance bucket.")
    data = tmp_path / "data"
    old, _ = await backed_up(tmp_path / "other", "Deploys go out on Tuesdays.")
    restore(old, config_of(data), force=False)
    held = FolderLock(data / "store" / LOCK_FILE, str(data / "store"))  # as a daemon holds it
    held.acquire()
    try:
        with pytest.raises(StoreLockedError, match="holds"):
            restore(source, config_of(data), force=True)
    finally:
        held.release()
    assert await contents(data) == ["Deploys go out on Tuesdays."]
    assert read_manifest(source)["files"][0] == "store"


def test_the_cli_refuses_a_daemon_of_the_folder_on_another_port(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    daemon = start_daemon(tmp_path / "running")
    try:
        # the daemon's data folder, on a port it does not serve
        config = write_config(
            tmp_path / "cli", data_dir=str(daemon.home), server={"port": free_port()}
        )
        code = main(["restore", str(tmp_path / "nowhere"), "--force", "--config", str(config)])
        _, err = capsys.readouterr()
        assert code == 2, err
        assert f"the daemon of this data folder runs (pid {daemon.process.pid}" in err
    finally:
        daemon.stop()


async def test_a_copy_that_fails_midway_leaves_the_data_folder_as_it_was(tmp_path: Path) -> None:
    source, _ = await backed_up(tmp_path, "Invoices go to the finance bucket.")
    data = tmp_path / "data"
    old, _ = await backed_up(tmp_path / "other", "Deploys go out on Tuesdays.")
    restore(old, config_of(data), force=False)
    (source / "store" / "unreadable").symlink_to(tmp_path / "gone")  # its copy fails
    with pytest.raises(OSError):
        restore(source, config_of(data), force=True)
    assert await contents(data) == ["Deploys go out on Tuesdays."]
    assert not [p.name for p in data.iterdir() if p.name.startswith((".restore-", ".replaced-"))]


async def test_backup_names_a_destination_it_cannot_use(tmp_path: Path) -> None:
    runtime = await start_runtime(config_of(tmp_path / "source"), run_scheduler=False)
    try:
        await runtime.api.remember("Invoices go to the finance bucket.")
        file = tmp_path / "notes.txt"
        file.write_text("x")
        with pytest.raises(InvalidInput, match="notes.txt is a file; back up into a new"):
            await backup(runtime.config, runtime.service, file)
        with pytest.raises(InvalidInput, match=r"cannot create the folder .*notes.txt/sub \("):
            await backup(runtime.config, runtime.service, file / "sub")
    finally:
        await runtime.stop()
