"""The README's quick start command, end to end: daemon, remember, recall, LLM state, the
"Next:" commands (runnable as printed whether or not the venv is on PATH), stop."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from helpers_http import free_port, subprocess_env, write_config

README = Path(__file__).resolve().parents[1] / "README.md"
SCRIPT = Path(sys.prefix) / "bin" / "tribalmemory"


def run(args, env, cwd, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "tribalmemory", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def next_commands(stdout: str) -> list[str]:
    block = stdout.split("Next:\n", 1)[1].splitlines()
    return [line.strip() for line in block if not line.strip().startswith("`tribalmemory`")]


def test_quickstart_starts_the_daemon_remembers_and_recalls(tmp_path):
    home, user = tmp_path / "home", tmp_path / "user"
    user.mkdir()
    config = write_config(home, server={"port": free_port()})
    env = subprocess_env(home, user)
    env.pop("OPENAI_API_KEY", None)
    env["PATH"] = os.pathsep.join(  # as after the Quick start: the venv is not on PATH
        p for p in env.get("PATH", "/usr/bin:/bin").split(os.pathsep) if p != str(SCRIPT.parent)
    )
    try:
        first = run(["quickstart", "--config", str(config)], env, tmp_path)
        assert first.returncode == 0, first.stderr
        lines = first.stdout.splitlines()
        assert lines[0].startswith("1. daemon running at http://127.0.0.1:")
        project = tmp_path.name.lower()  # the working directory's, as every command run here
        assert lines[1].startswith("2. remembered memory ") and f"in project {project}" in lines[1]
        assert lines[2].startswith("3. recalled (similarity ") and "quick start" in lines[2]
        assert lines[3].startswith("4. episodes on, offline, extractive: no API key configured")
        assert f"`tribalmemory` is not on your PATH: run it as {SCRIPT}" in first.stdout
        assert f"source {SCRIPT.parent / 'activate'}" in first.stdout
        commands = next_commands(first.stdout)
        assert [c.split()[1] for c in commands] == ["init", "status", "service"]
        for command in commands:
            assert shlex.split(command)[0] == str(SCRIPT)
            assert f"--config {config}" in command  # the same configuration as the quick start
        again = run(["quickstart", "--config", str(config)], env, tmp_path)
        assert again.returncode == 0 and "2. already remembered" in again.stdout
        remembered = lines[1].split()[3]
        found = run(["recall", "how do agents connect", "--config", str(config)], env, tmp_path)
        assert found.returncode == 0 and remembered in found.stdout, found.stderr
        # The printed lines run as printed, in a shell whose PATH lacks the venv.
        status = subprocess.run(
            ["bash", "-c", commands[1]], env=env, capture_output=True, text=True, timeout=120
        )
        assert status.returncode == 0 and "daemon: running" in status.stdout, status.stderr
        connect = subprocess.run(
            ["bash", "-c", commands[0]], env=env, capture_output=True, text=True, timeout=120
        )
        assert connect.returncode == 0 and "Claude Code: added" in connect.stdout
        stopped = subprocess.run(
            ["bash", "-c", commands[2]], env=env, capture_output=True, text=True, timeout=120
        )
        assert stopped.returncode == 0 and "stopped the daemon" in stopped.stdout
    finally:  # a no-op when the printed `service stop` already ran
        run(["service", "stop", "--config", str(config)], env, tmp_path)


def test_next_lines_are_bare_when_path_finds_this_installation(tmp_path, monkeypatch):
    from tribalmemory.cli.quickstart import next_steps

    monkeypatch.setenv("PATH", f"{SCRIPT.parent}{os.pathsep}/usr/bin:/bin")
    assert next_steps(None) == [
        "Next:",
        "  tribalmemory init --claude-code --codex --claude-desktop   # connect agents",
        "  tribalmemory status",
        "  tribalmemory service stop",
    ]
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert next_steps(None)[2] == f"  {SCRIPT} init --claude-code --codex --claude-desktop" + (
        "   # connect agents"
    )


def test_readme_commands_work_as_written():
    """Every README command runs in the shell the Quick start leaves: the venv not active.

    A bare ``tribalmemory`` is only used after ``source .venv/bin/activate`` in the same
    block; otherwise commands say ``.venv/bin/tribalmemory``.
    """
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    bare = 0
    for block in blocks:
        active = False
        for line in block.splitlines():
            command = line.strip()
            if command.startswith("source .venv/bin/activate"):
                active = True
            if command.startswith("tribalmemory "):
                bare += 1
                assert active, f"README runs `{command}` before activating the venv"
    assert bare >= 5  # the Everyday use block
