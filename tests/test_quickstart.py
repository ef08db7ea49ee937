"""The README's quick start command, end to end: daemon, remember, recall, LLM state, stop."""

import subprocess
import sys

from helpers_http import free_port, subprocess_env, write_config


def run(args, env, cwd, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "tribalmemory", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_quickstart_starts_the_daemon_remembers_and_recalls(tmp_path):
    home, user = tmp_path / "home", tmp_path / "user"
    user.mkdir()
    config = write_config(home, server={"port": free_port()})
    env = subprocess_env(home, user)
    env.pop("OPENAI_API_KEY", None)
    try:
        first = run(["quickstart", "--config", str(config)], env, tmp_path)
        assert first.returncode == 0, first.stderr
        lines = first.stdout.splitlines()
        assert lines[0].startswith("1. daemon running at http://127.0.0.1:")
        assert lines[1].startswith("2. remembered memory ")
        assert lines[2].startswith("3. recalled (similarity ") and "quick start" in lines[2]
        assert "without an LLM (no_api_key)" in lines[3]
        again = run(["quickstart", "--config", str(config)], env, tmp_path)
        assert again.returncode == 0 and "2. already remembered" in again.stdout
    finally:
        stopped = run(["service", "stop", "--config", str(config)], env, tmp_path)
    assert stopped.returncode == 0 and "stopped the daemon" in stopped.stdout
