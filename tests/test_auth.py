"""API tokens: storage, 401 + WWW-Authenticate, rotation without restart, bind refusal."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_http import BASE_URL, free_port, subprocess_env, write_config
from starlette.testclient import TestClient

from tribalmemory.cli.main import main
from tribalmemory.config import ConfigError, load_config
from tribalmemory.interfaces.auth import (
    TOKEN_PATTERN,
    TokenStore,
    check_bind,
    generate_token,
    hash_token,
    is_loopback,
    read_env_value,
    set_env_value,
)
from tribalmemory.interfaces.http import create_app
from tribalmemory.runtime import Runtime

MCP_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_token_format_and_hash() -> None:
    token = generate_token()
    assert TOKEN_PATTERN.match(token) and token != generate_token()
    assert len(hash_token(token)) == 64 and hash_token(token) != token


def test_token_store_reads_changes_and_fails_closed(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "auth.json")
    assert store.current_hash() is None and not store.active
    first, second = generate_token(), generate_token()
    store.save(first)
    assert stat.S_IMODE((tmp_path / "auth.json").stat().st_mode) == 0o600
    assert first not in (tmp_path / "auth.json").read_text()
    assert store.current_hash() == hash_token(first)
    TokenStore(tmp_path / "auth.json").save(second)  # another process rotates
    assert store.current_hash() == hash_token(second)
    (tmp_path / "auth.json").write_text("{broken")
    assert store.active and store.current_hash() not in (hash_token(first), hash_token(second))


def test_env_file_keeps_other_lines(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("OPENAI_API_KEY=sk-1\nexport TRIBAL_MEMORY_TOKEN=old\n")
    set_env_value(env, "TRIBAL_MEMORY_TOKEN", "tm_new")
    assert env.read_text() == "OPENAI_API_KEY=sk-1\nTRIBAL_MEMORY_TOKEN=tm_new\n"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    assert read_env_value(env, "TRIBAL_MEMORY_TOKEN") == "tm_new"


def test_without_token_everything_is_open(client: TestClient) -> None:
    assert client.get("/v1/stats").status_code == 200


def test_routes_need_the_token_once_it_exists(client: TestClient, runtime: Runtime) -> None:
    token = generate_token()
    TokenStore(runtime.config.data_path / "auth.json").save(token)
    for method, path in [
        ("GET", "/v1/stats"),
        ("POST", "/v1/recall"),
        ("GET", "/v1/episodes"),
        ("GET", "/v1/nothing"),
        ("POST", "/mcp"),
    ]:
        response = client.request(method, path, json={})
        assert response.status_code == 401, (method, path)
        assert response.json() == {
            "error": "missing bearer token",
            "detail": response.json()["detail"],
        }
        assert response.headers["www-authenticate"] == 'Bearer realm="tribal-memory"'
    wrong = client.get("/v1/stats", headers=bearer(generate_token()))
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid bearer token"
    assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
    assert client.get("/v1/stats", headers={"Authorization": token}).status_code == 401
    assert client.get("/v1/health").status_code == 200
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/v1/stats", headers=bearer(token)).status_code == 200
    assert client.get("/v1/stats", headers={"authorization": f"bearer {token}"}).status_code == 200
    mcp = client.post(
        "/mcp",
        json=MCP_INIT,
        headers={**bearer(token), "accept": "application/json, text/event-stream"},
    )
    assert mcp.status_code == 200


def test_cli_generate_and_rotate_take_effect_without_restart(
    client: TestClient,
    runtime: Runtime,
    tm_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = str(tm_home / "config.yaml")
    assert main(["token", "show", "--config", config]) == 1
    assert main(["token", "generate", "--config", config]) == 0
    env_file = tm_home / ".env"
    first = read_env_value(env_file, "TRIBAL_MEMORY_TOKEN")
    assert first and TOKEN_PATTERN.match(first)
    assert first not in capsys.readouterr().out  # masked unless --reveal
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert client.get("/v1/stats").status_code == 401
    assert client.get("/v1/stats", headers=bearer(first)).status_code == 200
    assert main(["token", "generate", "--config", config]) == 1  # refuses to replace

    assert main(["token", "rotate", "--config", config]) == 0
    second = read_env_value(env_file, "TRIBAL_MEMORY_TOKEN")
    assert second and second != first
    assert client.get("/v1/stats", headers=bearer(first)).status_code == 401
    assert client.get("/v1/stats", headers=bearer(second)).status_code == 200

    # each command is a process of its own: the first token, which an earlier command of
    # this test process loaded from .env, is not a shell's variable
    monkeypatch.delenv("TRIBAL_MEMORY_TOKEN", raising=False)
    capsys.readouterr()
    assert main(["token", "show", "--config", config]) == 0
    shown = capsys.readouterr().out
    assert second not in shown and second[:7] in shown
    assert main(["token", "show", "--reveal", "--config", config]) == 0
    assert capsys.readouterr().out.splitlines()[0] == second
    # a token set in the shell wins over .env for every command: show says so, and that it
    # is not the daemon's (show once printed the file's token and exited 0)
    monkeypatch.setenv("TRIBAL_MEMORY_TOKEN", first)
    assert main(["token", "show", "--config", config]) == 1
    out, err = capsys.readouterr()
    assert first[:7] in out and "from this shell's TRIBAL_MEMORY_TOKEN" in out
    assert "this shell's TRIBAL_MEMORY_TOKEN is not the daemon's current token" in err
    monkeypatch.setenv("TRIBAL_MEMORY_TOKEN", second)  # the same as .env's: the usual case
    assert main(["token", "show", "--config", config]) == 0
    assert "from this shell" not in capsys.readouterr().out
    # a short token of the user's own: its mask would be most of it, and "…" said nothing
    monkeypatch.setenv("TRIBAL_MEMORY_TOKEN", "hunter2")
    assert main(["token", "show", "--config", config]) == 1
    out = capsys.readouterr().out
    assert "a token of 7 characters, too short to show a part of it" in out
    assert "hunter2" not in out


def test_is_loopback() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.10")


def test_check_bind(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "auth.json")
    check_bind("127.0.0.1", store)
    with pytest.raises(ConfigError, match="without an API token"):
        check_bind("0.0.0.0", store)
    store.save(generate_token())
    check_bind("0.0.0.0", store)


def test_serve_refuses_non_loopback_without_token(tm_home: Path, tmp_path: Path) -> None:
    config = write_config(tm_home, episodes={"enabled": False})
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tribalmemory",
            "serve",
            "--config",
            str(config),
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
        ],
        env=subprocess_env(tm_home, tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0 without an API token" in done.stderr
    assert "Traceback" not in done.stderr


def test_auth_json_is_per_data_dir(tm_home: Path) -> None:
    config = load_config(write_config(tm_home))
    assert main(["token", "generate", "--config", str(tm_home / "config.yaml")]) == 0
    saved = json.loads((config.data_path / "auth.json").read_text())
    assert set(saved) == {"token_sha256", "created_at"}


def test_non_loopback_app_fails_closed_without_token(tm_home: Path) -> None:
    config = load_config(write_config(tm_home, episodes={"enabled": False}))
    config.server.host = "0.0.0.0"
    with TestClient(create_app(config), base_url=BASE_URL) as client:
        assert client.get("/v1/stats").status_code == 401
        assert client.get("/v1/health").status_code == 200
        token = generate_token()
        TokenStore(config.data_path / "auth.json").save(token)
        assert client.get("/v1/stats", headers=bearer(token)).status_code == 200
