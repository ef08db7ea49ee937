"""The CLI in local mode (no daemon) and against a real daemon; the client; init; logs."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import socket
import subprocess
import sys
import threading
import tomllib
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers_http import (
    LOCAL,
    Daemon,
    build_runtime,
    free_port,
    subprocess_env,
    unique,
    write_config,
)

from tribalmemory import __version__
from tribalmemory.cli.main import main
from tribalmemory.client import (
    AuthRequired,
    DaemonClient,
    DaemonStartError,
    ensure_daemon,
    find_daemon,
)
from tribalmemory.config import load_config
from tribalmemory.errors import FeatureDisabled, InvalidInput, NotFound
from tribalmemory.interfaces.auth import TokenStore, generate_token
from tribalmemory.logs import follow

Capture = pytest.CaptureFixture[str]


def bounded_main(argv: list[str], timeout: float = 60.0) -> int:
    """``main(argv)`` in a thread: a command that hangs fails the test instead of the run."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["code"] = main(argv)
        except BaseException as exc:  # re-raised below, in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        pytest.fail(f"`tribalmemory {' '.join(argv)}` did not finish within {timeout:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return int(outcome["code"])


def run(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = bounded_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: Capture, *argv: str) -> Any:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def local(tm_home: Path) -> str:
    """A config for local mode: no daemon answers on its port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return str(write_config(tm_home, server={"port": port}, episodes={"enabled": False}))


def test_version(capsys: Capture) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.strip() == f"tribalmemory {__version__}"
    done = subprocess.run(
        [sys.executable, "-m", "tribalmemory", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and __version__ in done.stdout


def test_usage_errors_exit_2(capsys: Capture) -> None:
    assert main([]) == 2
    for argv in (
        ["recall"],
        ["remember", "x", "--bogus"],
        ["serve", "--port", "99999"],
        ["episodes"],
        ["recall", "q", "--limit", "many"],
    ):
        with pytest.raises(SystemExit) as caught:
            main(argv)
        assert caught.value.code == 2, argv


def test_extra_words_are_the_commands_error_with_the_quoted_text(capsys: Capture) -> None:
    """Words left over after a command's arguments are refused with that command's usage (the
    top level's said nothing of it), and, after a text given without quotes, the quoted text
    to type instead."""
    cases = {
        ("recall", "how", "do", "I", "deploy"): (
            "tribalmemory recall: error: unrecognized arguments: do I deploy; "
            "a query of several words goes in quotes: 'how do I deploy'"
        ),
        ("entities", "orders", "service"): (
            "tribalmemory entities: error: unrecognized arguments: service; "
            "a name of several words goes in quotes: 'orders service'"
        ),
        ("causes", "remove", "cl-1", "cl-2"): (
            "tribalmemory causes remove: error: unrecognized arguments: cl-2"
        ),
        ("recall", "q", "--bogus"): "tribalmemory recall: error: unrecognized arguments: --bogus",
    }
    for argv, said in cases.items():
        capsys.readouterr()
        with pytest.raises(SystemExit) as caught:
            main(list(argv))
        err = capsys.readouterr().err
        assert caught.value.code == 2, argv
        assert err.splitlines()[-1] == said
        assert err.startswith(
            f"usage: tribalmemory {' '.join(argv[: 2 if argv[0] == 'causes' else 1])}"
        )


def test_an_errors_detail_is_printed_for_people(capsys: Capture) -> None:
    """A mapping a ``key: value`` a line and a list an item a line (both were one line of
    JSON: ``{"merged_into": ...}`` under a merged episode's error)."""
    from tribalmemory.cli.main import _fail

    _fail("no episode with id ep-1: it was merged into ep-2; use ep-2", {"merged_into": "ep-2"})
    _fail("2 problems", ["line 3: not JSON", {"line": 9, "error": "no id"}])
    _fail("plain", "Send a shorter content.")
    assert capsys.readouterr().err.splitlines() == [
        "tribalmemory: no episode with id ep-1: it was merged into ep-2; use ep-2",
        "  merged_into: ep-2",
        "tribalmemory: 2 problems",
        "  line 3: not JSON",
        '  {"line": 9, "error": "no id"}',
        "tribalmemory: plain",
        "  Send a shorter content.",
    ]


# -- local mode ------------------------------------------------------------------------------------


def test_local_recall_says_the_period_it_put_first(local: str, capsys: Capture) -> None:
    content = unique("Release notes are drafted in docs/releases")
    memory_id = run(capsys, "remember", content, "--config", local)[1].split()[1]
    query = "release notes drafted this year"  # a period: said, and --no-query-dates turns it off
    code, out, _ = run(capsys, "recall", query, "--config", local)
    assert code == 0 and "Dated this year first: memories from " in out and memory_id in out
    dated = run_json(capsys, "recall", query, "--no-query-dates", "--config", local)
    assert dated["period"] is None and dated["results"][0]["memory_id"] == memory_id


def test_local_remember_recall_forget(local: str, capsys: Capture) -> None:
    content = unique("Release notes are drafted in docs/releases")
    code, out, _ = run(
        capsys, "remember", content, "--tag", "docs", "--tag", "release", "--config", local
    )
    assert code == 0 and out.startswith("Stored ")
    memory_id = out.split()[1]
    assert str(uuid.UUID(memory_id)) == memory_id

    code, out, _ = run(capsys, "recall", "where are release notes drafted", "--config", local)
    assert code == 0 and memory_id in out and "[docs, release]" in out
    assert f"\n   {content}\n" in out  # the whole memory, not a preview
    assert "first: memories from" not in out  # the query names no period

    found = run_json(
        capsys, "recall", "release notes", "--tag", "docs", "--limit", "1", "--config", local
    )
    assert [r["memory_id"] for r in found["results"]] == [memory_id]

    code, out, _ = run(capsys, "remember", content, "--config", local)
    assert code == 0 and out.startswith("Not stored: near-duplicate")
    assert run_json(capsys, "stats", "--config", local)["total_memories"] == 1

    # two recalls returned it; used right after upgrades the last one (no third access)
    code, out, _ = run(capsys, "used", memory_id, "--config", local)
    assert code == 0 and out.startswith(f"Marked {memory_id} used: accessed 2 times"), out
    code, _, err = run(capsys, "used", "not-an-id", "--config", local)
    assert code == 1 and "is not a memory id" in err

    code, out, _ = run(capsys, "forget", memory_id, "--config", local)
    assert code == 0 and out.strip() == f"Forgot {memory_id}"
    code, _, err = run(capsys, "forget", memory_id, "--config", local)
    assert code == 1 and f"no memory with id {memory_id}" in err
    code, _, err = run(capsys, "forget", "not-an-id", "--config", local)
    assert code == 1 and "is not a memory id" in err


def test_local_recall_prints_the_whole_memory_with_its_line_breaks(
    local: str, capsys: Capture
) -> None:
    """Issue 40.10: recall cut every memory to one line (97 characters when piped)."""
    steps = "\n".join(f"{k}. run migration step {k} on the staging database" for k in range(1, 6))
    content = unique(f"Release checklist for the database migration:\n{steps}")
    code, out, _ = run(capsys, "remember", content, "--config", local)
    assert code == 0
    code, out, _ = run(capsys, "recall", "database migration release checklist", "--config", local)
    shown = "\n".join("   " + line for line in content.splitlines())
    assert code == 0 and shown in out and len(content) > 200


def test_local_correct_hides_the_old_memory_from_recall(local: str, capsys: Capture) -> None:
    code, out, _ = run(capsys, "remember", "Staging Postgres uses port 5433", "--config", local)
    old = out.split()[1]
    code, out, _ = run(capsys, "correct", old, "Staging Postgres uses port 6543", "--config", local)
    assert code == 0 and out.startswith("Stored correction ") and f"{old} is superseded" in out
    new = out.split()[2].rstrip(";")
    found = run_json(capsys, "recall", "staging postgres port", "--config", local)
    assert [r["memory_id"] for r in found["results"]] == [new]
    code, out, _ = run(
        capsys, "recall", "staging postgres port", "--include-superseded", "--config", local
    )
    assert code == 0 and f"{old}" in out and f"superseded by {new}" in out


def test_local_recall_takes_every_field_of_its_request(local: str, capsys: Capture) -> None:
    """Issue 41.2: recall's options were 4 of the 10 fields of its request; every field of the
    model is now an option (from tribalmemory.shapes) and reaches the API."""
    code, out, _ = run(
        capsys, "remember", unique("Webhooks are retried 3 times"), "--config", local
    )
    old = out.split()[1]
    fixed = unique("Webhooks are retried 5 times")
    code, out, _ = run(capsys, "correct", old, fixed, "--config", local)
    assert code == 0
    new = out.split()[2].rstrip(";")
    query = ["recall", "how often are webhooks retried", "--config", local]
    found = run_json(capsys, *query, "--source-type", "CORRECTION")
    assert [r["memory_id"] for r in found["results"]] == [new]
    found = run_json(capsys, *query, "--include-superseded", "--source-type", "USER_EXPLICIT")
    assert [r["memory_id"] for r in found["results"]] == [old]
    assert run_json(capsys, *query, "--after", "2999-01-01")["results"] == []
    assert run_json(capsys, *query, "--before", "2000-01-01")["results"] == []
    assert run_json(capsys, *query, "--min-relevance", "1")["results"] == []  # not the same text
    code, _, err = run(capsys, *query, "--min-relevance", "2")
    assert code == 1 and "min_relevance" in err


def test_local_status_and_validation_errors(local: str, tm_home: Path, capsys: Capture) -> None:
    code, out, _ = run(capsys, "status", "--config", local)
    assert code == 3 and out.startswith("daemon: not running") and str(tm_home) in out
    assert "status: ok" not in out
    # the command to type names this data folder's configuration, as given
    assert f"`tribalmemory service start --config {Path(local).resolve()}`" in out
    code, out, _ = run(capsys, "status", "--config", local, "--json")
    assert code == 3 and json.loads(out)["daemon"]["running"] is False
    code, _, err = run(capsys, "recall", "x", "--limit", "500", "--config", local)
    assert code == 1 and "limit must be from 1 to 50" in err
    code, _, err = run(capsys, "episodes", "list", "--config", local)
    assert code == 1 and "Episode feature not enabled" in err


def test_status_says_why_it_waits_for_a_port_that_does_not_answer(
    tm_home: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Something takes the connection and never answers (a stopped daemon): status says it
    waits, and for how long, before it waits; then what holds the port."""
    import tribalmemory.client

    # the second, patient probe waits 10 s in use; 1 s here keeps the test short
    monkeypatch.setattr(tribalmemory.client, "BUSY_PROBE_TIMEOUT", 1.0)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel takes connections; nothing reads or answers them
        port = silent.getsockname()[1]
        config = write_config(tm_home, server={"port": port}, episodes={"enabled": False})
        code, out, err = run(capsys, "status", "--config", str(config))
    assert code == 3
    assert err == (
        f"tribalmemory: the daemon at http://127.0.0.1:{port} took the connection but has not "
        "answered in 0.5 s (busy, or stopped); waiting up to 1 s more\n"
    )
    assert out.startswith("daemon: not running; something that is not a Tribal Memory daemon holds")


def test_local_mode_with_store_held_elsewhere_exits_2(
    local: str, embedder: Any, capsys: Capture
) -> None:
    holder = build_runtime(load_config(local), embedder)
    try:
        code, _, err = run(capsys, "stats", "--config", local)
    finally:
        holder.service.store.close()
    assert code == 2 and "holds" in err and "tribalmemory status" in err
    assert "Traceback" not in err


def test_a_command_without_the_daemon_checks_the_llm_only_when_it_needs_it(
    tm_home: Path,
) -> None:
    """With an API key set, reading episodes without the daemon does not import litellm (it
    takes seconds); `costs` still shows the LLM's state, checked when asked for."""
    config = write_config(
        tm_home,
        server={"port": free_port()},
        episodes={"enabled": True, "summarizer_provider": "openai"},
    )
    script = (
        "import contextlib, io, json, sys\n"
        "from tribalmemory.cli.main import main\n"
        "seen = []\n"
        "for argv in (['episodes', 'list'], ['costs']):\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        code = main([*argv, '--json', '--config', sys.argv[1]])\n"
        "    seen.append([code, json.loads(out.getvalue()), 'litellm' in sys.modules])\n"
        "print(json.dumps(seen))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(config)],
        env={**subprocess_env(tm_home, tm_home.parent), "OPENAI_API_KEY": "sk-test"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (listed, episodes, imported), (costed, costs, imported_then) = json.loads(done.stdout)
    assert (listed, episodes["count"], imported) == (0, 0, False)
    assert (costed, costs["llm"]["state"], imported_then) == (0, "ready", True), costs


def test_serve_refused_by_a_held_store_says_why_once(
    local: str, tm_home: Path, embedder: Any
) -> None:
    """The reason is the command's own message on stderr, not also a log line before it; the
    log file keeps the record (``service logs`` shows why the daemon did not start)."""
    holder = build_runtime(load_config(local), embedder)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tribalmemory", "serve", "--config", local],
            env=subprocess_env(tm_home, tm_home.parent),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        holder.service.store.close()
    assert done.returncode == 2, done.stderr
    assert done.stderr.count(f"holds {tm_home / 'store'}") == 1, done.stderr
    said = [line for line in done.stderr.splitlines() if "holds" in line]
    assert said[0].startswith("tribalmemory: another Tribal Memory process"), done.stderr
    logged = (tm_home / "logs" / "server.log").read_text(encoding="utf-8")
    assert "ERROR   tribalmemory: cannot start: another Tribal Memory process" in logged


ENTITIES_DOC = Path(__file__).resolve().parents[1] / "docs" / "entities.md"


def test_the_entities_doc_example_runs_as_its_comments_say(tm_home: Path, capsys: Capture) -> None:
    """docs/entities.md's CLI example, command by command (local mode, the default
    configuration): the two spellings are one entity, whose read lists both memories, and a
    recall filtered by the third spelling finds both."""
    (block,) = re.findall(r"```bash\n(.*?)```", ENTITIES_DOC.read_text(encoding="utf-8"), re.S)
    commands = [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]
    assert [c[:2] for c in commands] == [["tribalmemory", "remember"]] * 2 + [
        ["tribalmemory", "entities"]
    ] * 2 + [["tribalmemory", "recall"]]
    assert commands[3][2:] == ["orders-svc"] and "--entity" in commands[4]
    config = str(write_config(tm_home, server={"port": 1}))
    outputs = []
    for command in commands:
        code, out, err = run(capsys, *command[1:], "--config", config)
        assert code == 0, err
        outputs.append(out)
    stored = [out.split()[1] for out in outputs[:2]]  # "Stored <id> ..."
    listed = outputs[2].splitlines()[1].split()
    assert listed[:3] == ["orders-service", "system", "2"]
    assert "orders-service (system): 2 memories" in outputs[3]
    assert all(memory_id in outputs[3] and memory_id in outputs[4] for memory_id in stored)


def test_entities_leaves_out_doubted_names_unless_asked(tm_home: Path, capsys: Capture) -> None:
    """``entities`` lists a name an LLM's final summary read without giving it only with
    ``--include-doubted``, marked. The summary's verdict is written as the engine writes it
    (``reviewed``; the LLM path itself: tests/test_entity_doubt.py)."""
    from tribalmemory.episodes.store import EpisodeStore

    config = str(
        write_config(
            tm_home,
            server={"port": 1},
            episodes={"enabled": True, "detector_strategy": "embedding"},
        )
    )
    stored = run_json(
        capsys, "remember", "The Kestrel depot ships orders-svc builds.", "--config", config
    )
    listed = run_json(capsys, "entities", "--config", config)["entities"]
    assert {e["name"]: e["doubted"] for e in listed} == {"kestrel": False, "orders-service": False}
    store = EpisodeStore(Path(load_config(config).data_dir) / "episodes.sqlite3")
    try:
        with store.transaction() as db:
            store.entities.review(db, {stored["memory_id"]: ["orders-service"]})
    finally:
        store.close()
    assert [e["name"] for e in run_json(capsys, "entities", "--config", config)["entities"]] == [
        "orders-service"
    ]
    code, out, _ = run(capsys, "entities", "--include-doubted", "--config", config)
    rows = sorted(line.split()[:3] for line in out.splitlines()[1:])
    assert code == 0
    assert rows == [["kestrel", "(doubted)", "name"], ["orders-service", "system", "1"]]
    # an episode's entities list it, marked
    made = run_json(capsys, "episodes", "create", "Depot", stored["memory_id"], "--config", config)
    shown = ("episodes", "show", made["episode_id"], "--include-entities", "--config", config)
    code, out, _ = run(capsys, *shown)
    assert code == 0 and "  kestrel (name, 1 memory, doubted)" in out.splitlines(), out
    assert "  orders-service (system, 1 memory)" in out.splitlines()


def test_local_episode_commands(tm_home: Path, capsys: Capture) -> None:
    pytest.importorskip("tribalmemory.episodes.plugin", reason="episode engine not installed")
    config = str(
        write_config(
            tm_home,
            server={"port": 1},
            episodes={"enabled": True, "detector_strategy": "embedding"},
        )
    )
    first_text = unique("Kafka consumer lag alert fired")
    second_text = unique("Lag came from a slow downstream DB")
    first = run_json(capsys, "remember", first_text, "--config", config)["memory_id"]
    second = run_json(capsys, "remember", second_text, "--config", config)["memory_id"]
    code, out, _ = run(
        capsys, "episodes", "create", "Kafka lag incident", first, "--config", config
    )
    assert code == 0 and out.strip().endswith(" with 1 memory"), out  # not "1 memories"
    episode = out.split()[1]
    code, out, _ = run(capsys, "episodes", "add", episode, second, "--config", config)
    # the detector had put the second memory in an episode with the first: it is moved
    assert code == 0 and out.strip().startswith(f"Moved {second} from ep-"), out
    assert out.strip().endswith(f" to {episode}"), out
    code, out, _ = run(capsys, "episodes", "add", episode, second, "--config", config)
    assert code == 0 and out.strip() == f"{second} was in {episode} already; nothing changed"
    code, out, _ = run(capsys, "episodes", "list", "--config", config)
    # Rows after the header: the detector had put the two memories in an episode of its own
    # first, which the moves emptied; only the created one holds memories.
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert code == 0 and rows[episode].split()[1:3] == ["active", "2"], out
    assert rows[episode].endswith("Kafka lag incident")
    assert all(row.split()[2] == "0" for key, row in rows.items() if key != episode), out
    shown = run_json(capsys, "episodes", "show", episode, "--timeline", "--config", config)
    assert set(shown["memory_ids"]) == {first, second} and len(shown["timeline"]) == 2
    code, out, _ = run(capsys, "episodes", "show", episode, "--config", config)
    assert code == 0 and "title: Kafka lag incident" in out.splitlines()
    assert f"memory_ids: {first}, {second}" in out.splitlines()
    with_entities = ("episodes", "show", episode, "--include-entities", "--config", config)
    named = run_json(capsys, *with_entities)
    markers = sorted(text.split()[-1] for text in (first_text, second_text))  # unique()'s ids
    # and Kafka, a listed tool opening the first memory
    assert sorted(e["name"] for e in named["entities"]) == sorted([*markers, "kafka"]), named
    code, out, _ = run(capsys, *with_entities)
    lines = out.splitlines()
    listed = lines[lines.index("entities:") + 1 : lines.index("entities:") + 4]
    expected = [f"  {m} (identifier, 1 memory)" for m in markers] + ["  kafka (name, 1 memory)"]
    assert code == 0 and sorted(listed) == sorted(expected), out
    chain = run_json(capsys, "episodes", "chain", episode, "--config", config)
    assert chain["root_id"] == episode and chain["count"] == 1
    found = run_json(
        capsys, "episodes", "search", "Kafka lag", "--since", "2020-01-01", "--config", config
    )
    assert found["query"] == "Kafka lag" and [e["id"] for e in found["episodes"]] == [episode]
    code, out, _ = run(capsys, "episodes", "replay", "Kafka lag", "--config", config)
    replayed = run_json(capsys, "episodes", "replay", "Kafka lag", "--config", config)
    assert [e["id"] for e in replayed["episodes"]] == [episode]
    assert code == 0 and out.strip() == replayed["text"].strip()
    assert "Kafka lag incident" in out and first_text.split()[-1] in out
    query = ("recall", "Kafka consumer lag", "--limit", "2", "--config", config)
    code, out, _ = run(capsys, *query, "--group-by-episode")
    assert code == 0 and out.splitlines()[-2:] == ["By episode:", out.splitlines()[-1]], out
    assert out.splitlines()[-1].split()[1:] == [episode, "Kafka", "lag", "incident:", "1,", "2"]
    code, out, _ = run(capsys, *query)
    assert code == 0 and "By episode:" not in out
    code, _, err = run(capsys, "episodes", "search", "x", "--since", "soon", "--config", config)
    assert code == 1 and "time_start" in err
    for action, expected in (
        ("remove", f"Removed {second}"),
        ("close", "Closed"),
        ("regenerate", "Queued"),
        ("delete", "Deleted"),
    ):
        extra = [second] if action == "remove" else []
        code, out, err = run(capsys, "episodes", action, episode, *extra, "--config", config)
        assert code == 0 and out.startswith(expected), err
    code, _, err = run(capsys, "episodes", "show", episode, "--config", config)
    assert code == 1 and episode in err
    spent = run_json(capsys, "costs", "--config", config)
    assert spent["calls"] == spent["spend_usd"] == 0 and spent["by_episode"] == {}  # no LLM key
    assert spent["llm"]["state"] == "offline"  # checked before printing: it said "starting"


# -- against a running daemon ----------------------------------------------------------------------


@pytest.fixture
def at_daemon(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TRIBAL_MEMORY_HOME", str(daemon.home))
    for name in ("TRIBAL_MEMORY_TOKEN", "TRIBAL_MEMORY_CONFIG"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    return str(daemon.config_path)


def test_commands_use_the_daemon(daemon: Daemon, at_daemon: str, capsys: Capture) -> None:
    # The daemon holds the store: a command that opened it itself would exit 2.
    content = unique("Feature flags live in LaunchDarkly project web")
    stored = run_json(
        capsys,
        "remember",
        content,
        "--source-type",
        "auto_capture",
        "--context",
        "standup",
        "--config",
        at_daemon,
    )
    memory = LOCAL.get(f"{daemon.url}/v1/memory/{stored['memory_id']}").json()
    assert memory["content"] == content and memory["source_type"] == "AUTO_CAPTURE"
    assert memory["context"] == "standup"
    code, out, _ = run(capsys, "recall", "where are feature flags", "--config", at_daemon)
    assert code == 0 and stored["memory_id"] in out
    code, out, _ = run(capsys, "status", "--config", at_daemon)
    assert code == 0 and f"daemon: running at {daemon.url}" in out
    code, _, err = run(capsys, "costs", "--config", at_daemon)
    assert code == 1 and "Episode feature not enabled" in err
    code, out, _ = run(capsys, "forget", stored["memory_id"], "--config", at_daemon)
    assert code == 0
    assert LOCAL.get(f"{daemon.url}/v1/memory/{stored['memory_id']}").status_code == 404
    code, _, err = run(capsys, "reembed", "--config", at_daemon)
    assert code == 2 and "stop it first" in err  # held by another process, as doctor says


def test_daemon_client_matches_the_api(daemon: Daemon) -> None:
    async def scenario() -> None:
        client = DaemonClient(daemon.config())
        try:
            result = await client.remember(unique("Client parity check"), tags=["parity"])
            assert set(result) >= {"success", "memory_id", "duplicate_of", "episode_id"}
            got = await client.get_memory(result["memory_id"])
            assert got["tags"] == ["parity"]
            batch = await client.remember_batch([{"content": unique("batch via client")}])
            assert batch["stored"] == 1
            with pytest.raises(NotFound):
                await client.get_memory(str(uuid.uuid4()))
            with pytest.raises(InvalidInput, match="content must be a string"):
                await client.remember(None)
            with pytest.raises(InvalidInput, match="is not a memory id"):
                await client.forget("../../v1/stats")
            with pytest.raises(FeatureDisabled, match="Episode feature not enabled"):
                await client.episodes_list()
            with pytest.raises(InvalidInput, match="limit must be an integer"):
                await client.episodes_list(limit="5")
            assert client.health()["status"] == "ok"
            total = LOCAL.get(f"{daemon.url}/v1/stats").json()
            assert (await client.stats())["total_memories"] == total["total_memories"]
            assert total["total_memories"] >= 2  # the module's daemon: other tests add more
        finally:
            await client.aclose()

    asyncio.run(scenario())


def test_daemon_client_auth_and_rotation(daemon: Daemon) -> None:
    auth = TokenStore(daemon.home / "auth.json")
    token = generate_token()
    auth.save(token)
    try:
        with pytest.raises(AuthRequired, match="missing bearer token"):
            asyncio.run(DaemonClient(daemon.config()).stats())
        allowed = asyncio.run(DaemonClient(daemon.config(), token=token).stats())
        headers = {"Authorization": f"Bearer {token}"}
        by_http = LOCAL.get(f"{daemon.url}/v1/stats", headers=headers).json()
        assert allowed == by_http
        found = find_daemon(daemon.config())  # health needs no token
        assert found is not None and found.health()["status"] == "ok"
    finally:
        auth.path.unlink()
    assert asyncio.run(DaemonClient(daemon.config()).stats()) == allowed  # token gone: open


def test_daemon_logs_ready_and_the_missing_token(
    daemon: Daemon, at_daemon: str, capsys: Capture
) -> None:
    code, out, _ = run(capsys, "service", "logs", "-n", "200", "--config", at_daemon)
    assert code == 0 and f"ready: http://127.0.0.1:{daemon.port}" in out
    code, out, _ = run(capsys, "service", "logs", "--grep", "NO API TOKEN", "--config", at_daemon)
    assert code == 0 and out.count("\n") == 1 and "WARNING" in out  # said once, at start
    assert all("no api token" in line.lower() for line in out.splitlines())


def test_busy_port_exits_2(daemon: Daemon, tmp_path: Path) -> None:
    other = write_config(
        tmp_path / "other", server={"port": daemon.port}, episodes={"enabled": False}
    )
    done = subprocess.run(
        [sys.executable, "-m", "tribalmemory", "serve", "--config", str(other)],
        env=subprocess_env(tmp_path / "other", tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{daemon.port}" in done.stderr


# -- background daemon: ensure_daemon and service stop ---------------------------------------------


def test_ensure_daemon_starts_one_and_service_stop_stops_it(
    tm_home: Path, tmp_path: Path, capsys: Capture
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    path = write_config(tm_home, server={"port": port}, episodes={"enabled": False})
    config = load_config(path)
    assert find_daemon(config) is None
    client = ensure_daemon(config, path)
    try:
        assert client.health()["status"] == "ok"
        assert ensure_daemon(config, path).base_url == client.base_url  # found, not started
        assert (tm_home / "daemon.pid").exists()
    finally:
        code, out, err = run(capsys, "service", "stop", "--config", str(path))
    assert code == 0 and out.startswith("stopped the daemon"), err
    assert find_daemon(config) is None and not (tm_home / "daemon.pid").exists()
    assert "ready:" in (tm_home / "logs" / "server.log").read_text()


def test_ensure_daemon_reports_a_daemon_that_cannot_start(tm_home: Path) -> None:
    path = write_config(tm_home, server={"port": 1, "host": "0.0.0.0"})
    with pytest.raises(DaemonStartError, match="exited with code 2") as caught:
        ensure_daemon(load_config(path), path, timeout=60)
    assert "without an API token" in str(caught.value)


# -- init ------------------------------------------------------------------------------------------


def test_init_registers_idempotently_and_keeps_other_entries(
    tm_home: Path, capsys: Capture
) -> None:
    home = Path.home()
    claude = home / ".claude.json"
    claude.write_text(json.dumps({"numStartups": 3, "mcpServers": {"other": {"command": "x"}}}))
    codex = home / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text(
        'model = "o3"\n\n[mcp_servers.other]\ncommand = "y"\n\n'
        '[mcp_servers.tribal-memory]\nurl = "http://old"\n\n'
        '# keep this comment\n[profiles.fast]\nmodel = "mini"\n'
    )
    desktop = home / ".config" / "Claude" / "claude_desktop_config.json"

    code, out, err = run(capsys, "init", "--claude-code", "--codex", "--claude-desktop")
    assert code == 0, err
    assert "Claude Code: added" in out and "Codex: updated" in out
    assert "Claude Desktop: added" in out

    claude_data = json.loads(claude.read_text())
    assert claude_data["numStartups"] == 3 and claude_data["mcpServers"]["other"] == {
        "command": "x"
    }
    entry = claude_data["mcpServers"]["tribal-memory"]
    assert entry["type"] == "stdio" and entry["args"][-3:] == [
        "mcp",
        "--source-instance",
        "claude-code",
    ]
    codex_data = tomllib.loads(codex.read_text())
    assert codex_data["model"] == "o3" and codex_data["profiles"] == {"fast": {"model": "mini"}}
    assert codex_data["mcp_servers"]["other"] == {"command": "y"}
    # the data folder this shell chose (TRIBAL_MEMORY_HOME), which the client would not know
    assert entry["env"] == {"TRIBAL_MEMORY_HOME": str(tm_home.resolve())}
    assert codex_data["mcp_servers"]["tribal-memory"] == {
        "command": entry["command"],
        "args": [*entry["args"][:-1], "codex"],  # each client is named (source_instance)
        "env": entry["env"],
    }
    assert "# keep this comment" in codex.read_text()
    # Claude Desktop runs outside any repository: it stores into default and reads every project
    desktop_args = json.loads(desktop.read_text())["mcpServers"]["tribal-memory"]["args"]
    assert desktop_args == [
        *entry["args"][:-1],
        "claude-desktop",
        *("--project", "default", "--all-projects"),
    ]

    before = [p.read_bytes() for p in (claude, codex, desktop)]
    code, out, _ = run(capsys, "init", "--claude-code", "--codex", "--claude-desktop")
    assert code == 0 and out.count("already registered") == 3
    assert [p.read_bytes() for p in (claude, codex, desktop)] == before


def test_init_keeps_user_keys_and_refuses_broken_files(tm_home: Path, capsys: Capture) -> None:
    claude = Path.home() / ".claude.json"
    claude.write_text(
        json.dumps(
            {"mcpServers": {"tribal-memory": {"command": "old", "args": [], "env": {"A": "1"}}}}
        )
    )
    assert bounded_main(["init", "--claude-code"]) == 0
    entry = json.loads(claude.read_text())["mcpServers"]["tribal-memory"]
    home = str(tm_home.resolve())
    assert entry["env"] == {"A": "1", "TRIBAL_MEMORY_HOME": home} and entry["command"] != "old"
    claude.write_text("{not json")
    code, _, err = run(capsys, "init", "--claude-code")
    assert code == 1 and "not valid JSON" in err and claude.read_text() == "{not json"
    code, _, err = run(capsys, "init")
    assert code == 2 and "--claude-code" in err
    codex = Path.home() / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text("mcp_servers = 5\n")
    code, _, err = run(capsys, "init", "--codex")
    assert code == 1 and "expected mcp_servers to be a table" in err, err
    assert codex.read_text() == "mcp_servers = 5\n"


def test_init_passes_on_the_configuration_file_and_data_folder_this_shell_chose(
    tm_home: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tm_home)
    monkeypatch.setenv("TRIBAL_MEMORY_CONFIG", str(config))
    code, out, err = run(capsys, "init", "--claude-code")
    assert code == 0, err
    entry = json.loads((Path.home() / ".claude.json").read_text())["mcpServers"]["tribal-memory"]
    assert entry["args"][1:3] == ["--config", str(config.resolve())]
    assert entry["env"] == {"TRIBAL_MEMORY_HOME": str(tm_home.resolve())}
    assert f"reads the token from {tm_home / '.env'}" in out


# -- logs ------------------------------------------------------------------------------------------


def test_service_logs_tail_and_grep(tm_home: Path, capsys: Capture) -> None:
    config = write_config(tm_home)
    code, _, err = run(capsys, "service", "logs", "--config", str(config))
    assert code == 1 and "no log file" in err
    log = tm_home / "logs" / "server.log"
    log.parent.mkdir()
    log.write_text("".join(f"line {i} {'ERROR boom' if i % 3 == 0 else 'ok'}\n" for i in range(10)))
    code, out, _ = run(capsys, "service", "logs", "-n", "2", "--config", str(config))
    assert out.splitlines() == ["line 8 ok", "line 9 ERROR boom"]
    code, out, _ = run(capsys, "service", "logs", "--grep", "error", "--config", str(config))
    assert out.splitlines() == [f"line {i} ERROR boom" for i in (0, 3, 6, 9)]


def test_follow_yields_new_lines_and_survives_rotation(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("old line\n")
    lines = follow(log, grep="keep", poll=0)
    assert next(lines) is None
    with log.open("a") as handle:
        handle.write("keep one\ndrop this\nkeep tw")
    assert next(lines) == "keep one"
    assert next(lines) is None  # the half-written line is not shown yet
    with log.open("a") as handle:
        handle.write("o\n")
    assert next(lines) == "keep two"
    log.rename(tmp_path / "server.log.1")
    log.write_text("keep after rotation\n")
    assert next(lines) == "keep after rotation"
    lines.close()
