"""Reads across every project (issue 40.2): ``project: "*"`` at every door, writes refused.

A real daemon holds the same auth thread in projects alpha and beta and a database thread in
beta. A client started outside any repository (the CLI in a plain folder, ``tribalmemory mcp``
with the working directory ``/``) reads its own folder's project, which holds nothing: it
must be able to ask across projects (``"*"``, ``--all-projects``), be told where the episodes
are when it finds none, and never store into "all projects". ``init --claude-desktop`` says
which project the desktop client uses.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from helpers_http import Daemon, start_daemon
from mcp import Client as McpClient
from mcp import StdioServerParameters
from test_episodes_engine import AUTH, DB
from test_mcp import error_of, ok

from tribalmemory import Client
from tribalmemory.cli.main import main
from tribalmemory.errors import TribalError

QUERY = "refresh token logout in several tabs"


def settle(http: httpx.Client, deadline: float = 60.0) -> None:
    """Wait until the daemon's episode jobs are done (the queue is empty)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if http.get("/v1/health").json()["episodes"]["queue_depth"] == 0:
            return
        time.sleep(0.1)
    pytest.fail(f"episode jobs did not settle within {deadline} s")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = start_daemon(
        tmp_path_factory.mktemp("all-projects"),
        episodes={"detector_strategy": "embedding", "summary_debounce_seconds": 0},
    )
    yield running
    running.stop()


@pytest.fixture(scope="module")
def stored(daemon: Daemon) -> dict[str, list[str]]:
    """Memory ids by project: the auth thread in alpha and beta, the database one in beta."""
    ids: dict[str, list[str]] = {"alpha": [], "beta": []}
    with httpx.Client(base_url=daemon.url, trust_env=False, timeout=60) as http:
        for i in range(4):
            for project, text, hour in (("alpha", AUTH, 9), ("beta", AUTH, 9), ("beta", DB, 14)):
                memory = {
                    "content": text[i],
                    "created_at": f"2025-03-0{3 + i}T{hour:02d}:00:00Z",
                    "project": project,
                }
                answer = http.post("/v1/remember", json=memory).json()
                assert answer["success"], answer
                ids[project].append(answer["memory_id"])
        settle(http)
    return ids


def http(daemon: Daemon) -> httpx.Client:
    return httpx.Client(base_url=daemon.url, trust_env=False, timeout=60)


def episode_counts(client: httpx.Client) -> dict[str, int]:
    listed = client.get("/v1/projects").json()["projects"]
    return {p["name"]: p["episodes"] for p in listed if p["episodes"]}


def test_rest_reads_take_all_projects(daemon: Daemon, stored: dict[str, list[str]]) -> None:
    with http(daemon) as client:
        counts = episode_counts(client)
        assert set(counts) == {"alpha", "beta"}
        every = set(stored["alpha"]) | set(stored["beta"])

        recalled = client.post("/v1/recall", json={"query": QUERY, "limit": 50, "project": "*"})
        assert recalled.status_code == 200, recalled.text
        seen = {h["memory"]["project"] for h in recalled.json()["results"]}
        assert seen == {"alpha", "beta"}
        assert client.post("/v1/recall", json={"query": QUERY}).json()["results"] == []

        listed = client.get("/v1/memories", params={"project": "*", "limit": 100}).json()
        assert {m["id"] for m in listed["memories"]} == every  # summaries are not listed

        episodes = client.get("/v1/episodes", params={"project": "*", "limit": 100}).json()
        assert episodes["count"] == sum(counts.values())
        assert {e["project"] for e in episodes["episodes"]} == {"alpha", "beta"}
        one = client.get("/v1/episodes", params={"project": "alpha"}).json()
        assert one["count"] == counts["alpha"]

        searched = client.post("/v1/episodes/search", json={"query": QUERY, "project": "*"})
        assert searched.status_code == 200, searched.text
        assert {e["project"] for e in searched.json()["episodes"]} == {"alpha", "beta"}
        replay = client.post("/v1/episodes/replay", json={"topic": QUERY, "project": "*"})
        assert replay.status_code == 200 and replay.json()["count"] >= 2
        context = client.get("/v1/context", params={"project": "*"})
        assert context.status_code == 200
        active = {a["id"] for a in context.json()["active"]}
        assert active == {e["id"] for e in episodes["episodes"] if e["status"] == "active"}
        assert client.get("/v1/patterns", params={"project": "*"}).status_code == 200
        exported = client.get("/v1/export", params={"project": "*"})  # as without project
        assert exported.status_code == 200, exported.text
        lines = [json.loads(line) for line in exported.text.splitlines()]
        assert {line.get("project") for line in lines} >= {"alpha", "beta"}


def test_writes_need_one_project(daemon: Daemon) -> None:
    with http(daemon) as client:
        refused = [
            client.post("/v1/remember", json={"content": "Ship on Fridays?", "project": "*"}),
            client.post(
                "/v1/remember/batch", json={"memories": [{"content": "x", "project": "*"}]}
            ),
            client.post("/v1/episodes/start", json={"topic": "t", "session": "s", "project": "*"}),
        ]
        for response in refused:
            assert response.status_code == 400, response.text
            assert "'*' (all projects) is only for reads" in response.json()["error"]
        assert "*" not in {p["name"] for p in client.get("/v1/projects").json()["projects"]}


def test_the_python_client_reads_every_project(
    daemon: Daemon, stored: dict[str, list[str]]
) -> None:
    with Client(daemon.config_path, project="*") as everywhere:
        found = everywhere.recall(QUERY, limit=50)
        assert {h.memory.project for h in found.results} == {"alpha", "beta"}
        listed = everywhere.episodes_list()
        assert {e.project for e in listed.episodes} == {"alpha", "beta"}
        with pytest.raises(TribalError, match="only for reads"):
            everywhere.remember("Stored nowhere in particular.")


async def test_stdio_mcp_outside_a_repository(daemon: Daemon, stored: dict[str, list[str]]) -> None:
    """Claude Desktop's case: ``tribalmemory mcp`` with the working directory ``/``."""
    base = [sys.executable, "-m", "tribalmemory", "mcp", "--config", str(daemon.config_path)]

    def params(*extra: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=base[0], args=[*base[1:], *extra], env=daemon.env, cwd="/"
        )

    async with McpClient(params(), read_timeout_seconds=120) as agent:
        own = ok(await agent.call_tool("tribal_recall", {"query": QUERY}))
        assert own["results"] == []  # its folder's project holds nothing
        every = ok(await agent.call_tool("tribal_recall", {"query": QUERY, "project": "*"}))
        assert {h["memory"]["project"] for h in every["results"]} == {"alpha", "beta"}
        listed = ok(await agent.call_tool("tribal_episodes_list", {"project": "*"}))
        assert {e["project"] for e in listed["episodes"]} == {"alpha", "beta"}
        refused = error_of(
            await agent.call_tool("tribal_remember", {"content": "x", "project": "*"})
        )
        assert "only for reads" in refused

    # What init writes for Claude Desktop: stores into default, reads every project.
    async with McpClient(
        params("--project", "default", "--all-projects"), read_timeout_seconds=120
    ) as agent:
        every = ok(await agent.call_tool("tribal_recall", {"query": QUERY, "limit": 50}))
        assert {h["memory"]["project"] for h in every["results"]} == {"alpha", "beta"}
        searched = ok(await agent.call_tool("tribal_episodes_search", {"query": QUERY}))
        assert {e["project"] for e in searched["episodes"]} == {"alpha", "beta"}
        mine = ok(await agent.call_tool("tribal_remember", {"content": "Desktop note: hi."}))
        with http(daemon) as client:
            memory = client.get(f"/v1/memory/{mine['memory_id']}").json()
        assert memory["project"] == "default"
        alpha = ok(await agent.call_tool("tribal_recall", {"query": QUERY, "project": "alpha"}))
        assert {h["memory"]["project"] for h in alpha["results"]} == {"alpha"}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_outside_a_repository(
    daemon: Daemon,
    stored: dict[str, list[str]],
    tm_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "Downloads"
    folder.mkdir()
    monkeypatch.chdir(folder)
    config = ("--config", str(daemon.config_path))
    with http(daemon) as client:
        counts = episode_counts(client)
    total = sum(counts.values())

    code, out, err = cli(capsys, "episodes", "list", *config)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"No episodes in project 'downloads' (from the working directory {folder})."
    named = ", ".join(f"{n} {c}" for n, c in sorted(counts.items(), key=lambda i: (-i[1], i[0])))
    assert lines[1] == (
        f"{total} episodes are in other projects ({named}): add --all-projects, or --project NAME."
    )

    code, out, err = cli(capsys, "episodes", "search", QUERY, *config)  # said "No episodes."
    assert code == 0 and out.splitlines() == lines, err

    for flag in (["--all-projects"], ["--project", "*"]):
        code, out, err = cli(capsys, "episodes", "list", *flag, "--json", *config)
        assert code == 0, err
        assert json.loads(out)["count"] == total
    code, out, _ = cli(capsys, "recall", QUERY, "--all-projects", "--limit=50", "--json", *config)
    assert {h["memory"]["project"] for h in json.loads(out)["results"]} >= {"alpha", "beta"}
    code, out, _ = cli(capsys, "recall", QUERY, *config)
    assert out.startswith("No memories in project 'downloads' (from the working directory ")
    assert "memories are in other projects (beta " in out
    # a project that holds memories, whose filters left none: not sent to other projects
    code, out, _ = cli(capsys, "recall", QUERY, "--project", "beta", "--tag", "nope", *config)
    said = "No memory of project 'beta' (from --project) matches what was asked ("
    assert code == 0 and out.startswith(said)
    assert "add --all-projects" not in out

    code, _, err = cli(capsys, "remember", "Nowhere.", "--project", "*", *config)
    assert code == 2 and "'*' (all projects) is only for reads" in err
    code, _, err = cli(capsys, "episodes", "list", "--all-projects", "--project", "beta", *config)
    assert code == 2 and "either --project or --all-projects" in err


def test_init_says_which_project_each_client_uses(
    tm_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    desktop = Path.home() / ".config" / "Claude" / "claude_desktop_config.json"
    code, out, err = cli(capsys, "init", "--claude-desktop", "--claude-code")
    assert code == 0, err
    said = {line.split(":")[0]: line for line in out.splitlines()}
    assert "stores into project 'default' and reads every project" in said["Claude Desktop"]
    assert "--claude-desktop --project NAME" in said["Claude Desktop"]
    assert "the project of the repository it runs in" in said["Claude Code"]
    args = json.loads(desktop.read_text())["mcpServers"]["tribal-memory"]["args"]
    assert args[-3:] == ["--project", "default", "--all-projects"]
    claude = json.loads((Path.home() / ".claude.json").read_text())
    assert "--project" not in claude["mcpServers"]["tribal-memory"]["args"]  # its folder's

    code, out, err = cli(capsys, "init", "--claude-desktop", "--project", "Billing")
    assert code == 0, err
    assert "updated" in out and "It reads and stores project 'billing' only." in out
    args = json.loads(desktop.read_text())["mcpServers"]["tribal-memory"]["args"]
    assert args[-2:] == ["--project", "billing"]
    code, _, err = cli(capsys, "init", "--claude-desktop", "--project", "*")
    assert code == 2 and "only for reads" in err
