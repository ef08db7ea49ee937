"""Status that tells the truth, and a daemon that can be stopped whatever its config says."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakellm import FakeLLM, Reply, default_reply
from helpers_http import Daemon, free_port, start_daemon, subprocess_env, write_config

SETTLE_SECONDS = 60.0  # bounds a hang; the fake LLM answers at once


def cli(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tribalmemory", *args],
        env=subprocess_env(home, root),
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_status_with_no_daemon_says_so_and_exits_non_zero(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home, server={"port": free_port()})
    done = cli(tmp_path, home, "status")
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.startswith("daemon: not running") and "status: ok" not in done.stdout
    assert not (home / "store").exists()  # status does not open the store in its place


def test_status_names_a_foreign_program_on_the_port_and_a_daemon_elsewhere(
    tmp_path: Path,
) -> None:
    import socket

    home = tmp_path / "home"
    port = free_port()
    config = write_config(home, server={"port": port})
    with socket.socket() as foreign:  # any program listening there, not a Tribal Memory daemon
        foreign.bind(("127.0.0.1", port))
        foreign.listen()
        done = cli(tmp_path, home, "status")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "something that is not a Tribal Memory daemon holds" in done.stdout, done.stdout

    daemon: Daemon = start_daemon(tmp_path / "elsewhere")  # serves on a port of its own
    try:
        config.write_text(f"data_dir: {daemon.home}\nserver:\n  port: {port}\n")
        done = cli(tmp_path, home, "status", "--config", str(config))
        assert done.returncode == 3, done.stdout + done.stderr
        assert f"its process runs (pid {daemon.process.pid}" in done.stdout, done.stdout
        assert f"does not answer at http://127.0.0.1:{port}" in done.stdout
    finally:
        daemon.stop()


@pytest.mark.parametrize(
    "broken",
    ["server: [unclosed\n", "instance: 3\nserver:\n  port: not-a-port\n"],
    ids=["invalid-yaml", "invalid-values"],
)
def test_broken_config_stop_and_logs_still_work(tmp_path: Path, broken: str) -> None:
    daemon: Daemon = start_daemon(tmp_path)
    try:
        config = daemon.config_path
        config.write_text(f"data_dir: {daemon.home}\n{broken}", encoding="utf-8")

        logs = cli(tmp_path, daemon.home, "service", "logs", "-n", "200", "--config", str(config))
        assert logs.returncode == 0, logs.stderr
        assert "configuration error" in logs.stderr and "ready: http://" in logs.stdout

        status = cli(tmp_path, daemon.home, "status", "--config", str(config))
        assert status.returncode == 2
        assert "configuration error" in status.stderr
        assert f"daemon: running (pid {daemon.process.pid})" in status.stdout

        stopped = cli(tmp_path, daemon.home, "service", "stop", "--config", str(config))
        assert stopped.returncode == 0, stopped.stderr
        assert f"stopped the daemon (pid {daemon.process.pid})" in stopped.stdout
        assert daemon.process.wait(30) == 0

        status = cli(tmp_path, daemon.home, "status", "--config", str(config))
        assert status.returncode == 2 and "daemon: not running" in status.stdout
    finally:
        daemon.stop()


def test_other_commands_still_refuse_a_broken_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("server:\n  port: abc\n", encoding="utf-8")
    for args in (["stats"], ["service", "start"], ["serve"]):
        done = cli(tmp_path, home, *args)
        assert done.returncode == 2, args
        assert "server.port: expected an integer" in done.stderr and "Traceback" not in (
            done.stderr
        )


def wait_for(check: Callable[[], Any], what: str, deadline: float = SETTLE_SECONDS) -> Any:
    """Poll ``check`` until it returns something true (bounded: a hang fails the test)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    pytest.fail(f"{what} within {deadline} s")


def test_an_llm_whose_answers_keep_failing_is_degraded_in_health_and_status(
    tmp_path: Path, fake_llm_env: FakeLLM
) -> None:
    """Issue 40.4: with every answer failing validation, health and status said ``ready``
    (27 of 27 calls failed). Through a real daemon and the real litellm client: ``degraded``
    with the count of failed calls (each one request: no retries) and the last error, one
    WARNING in the log; the next good answer makes it ``ready`` again."""
    fake_llm_env.responder = lambda request: Reply.garbage()
    episodes = {
        "enabled": True,
        "detector_strategy": "embedding",
        "summary_debounce_seconds": 0,
        "max_retries": 0,
    }
    daemon = start_daemon(tmp_path, episodes=episodes)
    try:
        with httpx.Client(base_url=daemon.url, trust_env=False, timeout=30) as http:

            def llm() -> dict[str, Any]:
                return dict(http.get("/v1/health").json()["llm"])

            def settled() -> bool:
                return http.get("/v1/health").json()["episodes"]["queue_depth"] == 0

            assert wait_for(lambda: llm()["state"] != "starting", "the LLM check")
            assert llm()["state"] == "ready" and llm()["consecutive_failures"] == 0
            stored = http.post("/v1/remember", json={"content": "Deploys go out on Tuesdays."})
            created = http.post(
                "/v1/episodes",
                json={"title": "Deploy days", "memory_ids": [stored.json()["memory_id"]]},
            )
            episode_id = created.json()["episode_id"]
            while fake_llm_env.calls < 3:  # each summary call gets a non-JSON answer
                wait_for(settled, "the episode queue to settle")
                assert http.post(f"/v1/episodes/{episode_id}/regenerate").status_code == 200
            wait_for(settled, "the episode queue to settle")
            state = llm()
            assert state["state"] == "degraded", state
            assert state["consecutive_failures"] == fake_llm_env.calls >= 3
            assert "invalid_json" in state["last_error"]
            assert f"none of the last {fake_llm_env.calls} calls" in state["reason"]

            done = cli(tmp_path, daemon.home, "status", "--config", str(daemon.config_path))
            assert done.returncode == 0, done.stderr
            shown = done.stdout
            assert "  state: degraded" in shown
            assert f"  consecutive_failures: {fake_llm_env.calls}" in shown
            assert "  last_error: " in shown and "invalid_json" in shown

            fake_llm_env.responder = default_reply  # the model answers properly again
            assert http.post(f"/v1/episodes/{episode_id}/regenerate").status_code == 200
            wait_for(settled, "the episode queue to settle")
            state = llm()
            assert (state["state"], state["consecutive_failures"]) == ("ready", 0), state
    finally:
        daemon.stop()
    log = daemon.output.read_text(encoding="utf-8")
    assert log.count("to degraded") == 1, log  # logged when entering, not on every call
    assert "available again (was degraded)" in log
