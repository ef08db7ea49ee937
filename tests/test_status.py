"""Status that tells the truth, and a daemon that can be stopped whatever its config says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers_http import Daemon, free_port, start_daemon, subprocess_env, write_config


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
