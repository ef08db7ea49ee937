"""``tribalmemory ingest --from claude-code|codex [PATH]``: the session files those clients
write, read into conversations (pure readers) and ingested since the last ingest (the CLI in
local mode, on the real store)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers_http import free_port, write_config
from test_cli import run, run_json

from tribalmemory.cli import claude_code_sessions, codex_sessions
from tribalmemory.cli.session_lines import records
from tribalmemory.cli.transcripts import TranscriptError
from tribalmemory.service import turns

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
CLAUDE_SESSION = "5d0c7a52-8e4b-4a0f-9a53-2f1d6c3b9e10"
CLAUDE_FILE = FIXTURES / "claude-code" / f"{CLAUDE_SESSION}.jsonl"
CODEX_SESSION = "0199a6c1-7f3e-7d20-b5a4-93e1c2d4f5a6"
CODEX_FILE = FIXTURES / "codex" / f"rollout-2026-03-03T14-00-00-{CODEX_SESSION}.jsonl"

CLAUDE_MESSAGES = [
    ("user", "The invoice export test fails on CI since yesterday; can you find out why?"),
    ("assistant", "Let me run the export test locally first."),
    ("tool", 'Bash {"command":"pytest tests/test_export.py -x",'
     '"description":"Run the export test"}'),
    ("tool", "FAILED tests/test_export.py::test_totals - AssertionError: 41.99 != 42.00"),
    ("assistant", "Each line total is rounded before the invoice total is summed, so the cents "
     "drift. I will sum first and round once."),
    ("user", "Good, do that and add a test for the rounding."),
    ("assistant", "Done: the invoice total is summed from unrounded lines and rounded once; "
     "test_rounding covers a 41.995 case."),
]  # fmt: skip
CLAUDE_TURNS = [0, 1, 4, 5, 6]  # the two tool messages fold into the assistant's turn


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def said(session: Any) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in session.messages]


# -- the readers (pure) -------------------------------------------------------------------------


def test_a_claude_code_session_keeps_what_was_said_and_the_tools() -> None:
    """Thinking, the summary, the file snapshot, the system record and the meta caveat are
    dropped; the tool call and its result are tool messages; each message keeps its time and
    the line it comes from."""
    session = claude_code_sessions.read(CLAUDE_FILE.read_text(), CLAUDE_SESSION)
    assert session.conversation_id == CLAUDE_SESSION
    assert session.cwd == "/home/dev/src/billing"
    assert said(session) == CLAUDE_MESSAGES
    assert session.lines_of == [2, 3, 4, 5, 6, 9, 11]
    assert session.messages[0]["timestamp"] == "2026-03-02T09:00:00.120Z"
    assert (session.warnings, session.lines) == ([], 11)


def test_a_claude_code_session_names_its_conversation_by_the_session_id() -> None:
    """A file renamed keeps its conversation: the records' sessionId, not the file name."""
    session = claude_code_sessions.read(CLAUDE_FILE.read_text(), "copy-of-a-session")
    assert session.conversation_id == CLAUDE_SESSION


def test_claude_code_commands_sub_agents_and_unknown_blocks() -> None:
    base = {"sessionId": "s1", "timestamp": "2026-03-02T10:00:00Z"}
    records_ = [
        {"type": "user", "message": {"role": "user", "content":
            "<command-message>init is analysing</command-message>\n"
            "<command-name>/init</command-name>\n<command-args>--quick</command-args>"}},
        {"type": "user", "message": {"role": "user", "content":
            "<local-command-stdout>Wrote CLAUDE.md</local-command-stdout>"}},
        {"type": "assistant", "isSidechain": True,
         "message": {"role": "assistant", "content": "a sub-agent's reply"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Here is the plan."},
            {"type": "hologram", "data": "..."},
            {"type": "image", "source": {"type": "base64", "data": "iVBOR"}},
        ]}},
        {"type": "teleport", "where": "mars"},
    ]  # fmt: skip
    text = "".join(json.dumps(base | r) + "\n" for r in records_)
    session = claude_code_sessions.read(text, "s1")
    assert said(session) == [
        ("user", "/init --quick"),
        ("tool", "Wrote CLAUDE.md"),
        ("assistant", "Here is the plan."),
    ]
    assert session.warnings == [
        "line 4: content block 'hologram' is not known here: skipped",
        "line 5: record type 'teleport' is not known here: skipped",
    ]


def test_a_codex_rollout_keeps_what_was_said_and_the_tools() -> None:
    """The developer instructions, the environment context, turn context, events and reasoning
    are dropped; the function call and its output are tool messages."""
    session = codex_sessions.read(CODEX_FILE.read_text(), CODEX_FILE.stem)
    assert session.conversation_id == CODEX_SESSION
    assert session.cwd == "/home/dev/src/billing/deploy"
    assert said(session) == [
        ("user", "Why does the staging deploy hang at the migration step?"),
        ("tool", 'shell {"command":["bash","-lc","grep -n LOCK migrations/0042_invoices.sql"]}'),
        ("tool", "3:LOCK TABLE invoices IN ACCESS EXCLUSIVE MODE;\n"),
        ("assistant", "Migration 0042 locks the invoices table exclusively while the old release "
         "still writes to it; run it after the old pods stop."),
    ]  # fmt: skip
    assert session.lines_of == [5, 9, 10, 11]
    assert (session.warnings, session.lines) == ([], 13)


def test_a_codex_rollout_without_its_meta_is_named_by_its_file_and_unknown_items_warn() -> None:
    lines = lines_of(CODEX_FILE)[1:]  # no session_meta
    lines.insert(4, json.dumps({"timestamp": "2026-03-03T14:00:02Z", "type": "hologram"}))
    lines.insert(5, json.dumps({"timestamp": "2026-03-03T14:00:02Z", "type": "response_item",
                                "payload": {"type": "telepathy", "thought": "..."}}))  # fmt: skip
    session = codex_sessions.read("\n".join(lines) + "\n", CODEX_FILE.stem)
    assert session.conversation_id == CODEX_SESSION
    assert len(session.messages) == 4
    assert session.warnings == [
        "line 5: record type 'hologram' is not known here: skipped",
        "line 6: response item 'telepathy' is not known here: skipped",
    ]


def test_damaged_lines_are_named_and_a_line_still_being_written_is_left_for_later() -> None:
    lines = lines_of(CLAUDE_FILE)
    damaged = lines[:3] + ['{"type": "user", "message": '] + lines[3:] + ["[1, 2]"]
    with pytest.raises(TranscriptError) as caught:
        claude_code_sessions.read("\n".join(damaged) + "\n", CLAUDE_SESSION)
    assert caught.value.problems[0].startswith("line 4: not JSON")
    assert caught.value.problems[1] == "line 13: not a JSON object"
    unfinished = "\n".join(lines) + '\n{"type": "assistant", "mess'  # no line break at the end
    found, warnings, read = records(unfinished)
    assert (len(found), read) == (11, 11)
    assert warnings == [
        "line 12: not complete yet (the client is still writing it): left for the next ingest"
    ]


# -- the command ----------------------------------------------------------------------------------


@pytest.fixture
def local(tm_home: Path) -> str:
    """A config for local mode (no daemon answers on its port)."""
    return str(write_config(tm_home, server={"port": free_port()}, episodes={"enabled": False}))


def stored(capsys: pytest.CaptureFixture[str], config: str) -> int:
    return int(run_json(capsys, "--config", config, "stats")["total_memories"])


def test_a_claude_code_session_is_ingested_once_and_then_only_when_it_grows(
    capsys: pytest.CaptureFixture[str], local: str, tm_home: Path, tmp_path: Path
) -> None:
    session = tmp_path / f"{CLAUDE_SESSION}.jsonl"
    shutil.copy(CLAUDE_FILE, session)
    argv = ("--config", local, "ingest", "--from", "claude-code", str(session), "--project", "b")
    done = run_json(capsys, *argv)
    assert (done["sent"], done["stored"], done["turns"]) == (1, 5, 5)
    [report] = done["files"]
    assert (report["status"], report["conversation_id"]) == ("sent", CLAUDE_SESSION)
    state = json.loads((tm_home / "ingested" / "claude-code.json").read_text())
    assert state["files"][str(session)]["lines"] == 11
    ids = [turns.turn_id("b", CLAUDE_SESSION, i) for i in CLAUDE_TURNS]
    code, out, _ = run(capsys, "--config", local, "export")
    by_id = {r["id"]: r for r in map(json.loads, out.splitlines()) if "content" in r}
    assert by_id[ids[1]]["content"].split("\n") == [
        "assistant: Let me run the export test locally first.",
        '[tool] Bash {"command":"pytest tests/test_export.py -x","description":"Run the export '
        'test"}',
        "[tool] FAILED tests/test_export.py::test_totals - AssertionError: 41.99 != 42.00",
    ]
    assert by_id[ids[0]]["source_instance"] == "claude-code"
    assert by_id[ids[0]]["created_at"] == "2026-03-02T09:00:00.120000Z"

    # unchanged: no request at all (a send would store the forgotten turn again)
    assert run(capsys, "--config", local, "forget", ids[4])[0] == 0
    again = run_json(capsys, *argv)
    assert (again["sent"], again["unchanged"], again["stored"]) == (0, 1, 0)
    assert stored(capsys, local) == 4

    # grown: sent whole again, only what is not stored is stored
    more = [
        {"type": "user", "sessionId": CLAUDE_SESSION, "timestamp": "2026-03-02T09:05:00.000Z",
         "message": {"role": "user", "content": "Also check the credit notes export."}},
        {"type": "assistant", "sessionId": CLAUDE_SESSION, "timestamp": "2026-03-02T09:06:00Z",
         "message": {"role": "assistant", "content": [
             {"type": "text", "text": "Credit notes round the same way; fixed there too."}]}},
    ]  # fmt: skip
    with session.open("a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in more))
    grown = run_json(capsys, *argv)
    assert (grown["sent"], grown["turns"], grown["existing"], grown["stored"]) == (1, 7, 4, 3)
    assert stored(capsys, local) == 7
    assert run_json(capsys, *argv)["unchanged"] == 1


def test_a_damaged_session_is_refused_by_line_and_an_unknown_record_is_skipped(
    capsys: pytest.CaptureFixture[str], local: str, tm_home: Path, tmp_path: Path
) -> None:
    lines = lines_of(CLAUDE_FILE)
    damaged = tmp_path / "damaged" / f"{CLAUDE_SESSION}.jsonl"
    damaged.parent.mkdir()
    damaged.write_text("\n".join(lines[:5] + ["{oops"] + lines[5:]) + "\n")
    code, out, err = run(capsys, "--config", local, "ingest", "--from", "claude-code", str(damaged))
    assert code == 2
    assert "line 6: not JSON" in err and "nothing of it was sent" in err
    assert "1 refused" in out
    assert stored(capsys, local) == 0
    assert not (tm_home / "ingested" / "claude-code.json").exists()

    grown = tmp_path / "grown" / f"{CLAUDE_SESSION}.jsonl"
    grown.parent.mkdir()
    unknown = {"type": "hologram", "sessionId": CLAUDE_SESSION, "beam": "on"}
    grown.write_text("\n".join(lines[:2] + [json.dumps(unknown)] + lines[2:]) + "\n")
    code, out, err = run(capsys, "--config", local, "ingest", "--from", "claude-code", str(grown))
    assert code == 0, err
    assert f"{grown}: line 3: record type 'hologram' is not known here: skipped" in err
    assert stored(capsys, local) == 5


def test_a_codex_rollout_is_ingested_with_its_session_id(
    capsys: pytest.CaptureFixture[str], local: str, tmp_path: Path
) -> None:
    folder = tmp_path / "sessions" / "2026" / "03" / "03"
    folder.mkdir(parents=True)
    shutil.copy(CODEX_FILE, folder / CODEX_FILE.name)
    argv = ("--config", local, "ingest", "--from", "codex", str(tmp_path / "sessions"))
    done = run_json(capsys, *argv, "--project", "b")
    assert (done["sent"], done["turns"], done["stored"]) == (1, 2, 2)
    assert done["files"][0]["conversation_id"] == CODEX_SESSION
    assert done["files"][0]["folded"] == 2


def write_session(path: Path, source: Path, cwd: str, session_id: str) -> None:
    """``source``'s records with ``cwd`` and ``session_id`` as the session's."""
    out = []
    for line in lines_of(source):
        record = json.loads(line)
        if "cwd" in record:
            record |= {"cwd": cwd, "sessionId": session_id}
        if record.get("type") == "session_meta":
            record["payload"] |= {"cwd": cwd, "id": session_id}
        out.append(json.dumps(record))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n")


def test_without_a_path_the_sessions_of_the_working_repository_are_read(
    capsys: pytest.CaptureFixture[str],
    local: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In a subfolder of a git repository: Claude Code's project folders of the repository and
    of its subfolders, and the Codex rollouts that ran inside it, into the repository's
    project; other repositories' sessions (one with a name alike) are left alone, and so are
    a sub-agent's files."""
    repository = (tmp_path / "Billing.API").resolve()
    (repository / "deploy").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repository)], check=True, timeout=30)
    other = tmp_path / "web"
    claude, codex = tmp_path / "claude-home", tmp_path / "codex-home"
    monkeypatch.setenv("TRIBAL_CLAUDE_DIR", str(claude))
    monkeypatch.setenv("TRIBAL_CODEX_DIR", str(codex))
    monkeypatch.chdir(repository / "deploy")
    mine = claude / "projects" / str(repository).replace("/", "-").replace(".", "-")
    write_session(mine / f"{CLAUDE_SESSION}.jsonl", CLAUDE_FILE, str(repository), CLAUDE_SESSION)
    write_session(mine / "agent-1f2e.jsonl", CLAUDE_FILE, str(repository), CLAUDE_SESSION)
    sub = claude / "projects" / str(repository / "deploy").replace("/", "-").replace(".", "-")
    write_session(sub / "c0ffee00-sub.jsonl", CLAUDE_FILE, str(repository / "deploy"), "sub")
    theirs = claude / "projects" / str(other).replace("/", "-")
    write_session(theirs / "a-other-session.jsonl", CLAUDE_FILE, str(other), "a-other-session")
    alike = claude / "projects" / (mine.name + "-web")  # Billing.API-web: named alike, not in it
    write_session(alike / "alike.jsonl", CLAUDE_FILE, str(repository) + "-web", "alike")
    day = codex / "sessions" / "2026" / "03" / "03"
    write_session(day / CODEX_FILE.name, CODEX_FILE, str(repository / "deploy"), CODEX_SESSION)
    write_session(day / "rollout-2026-03-03T15-00-00-x.jsonl", CODEX_FILE, str(other), "x")

    done = run_json(capsys, "--config", local, "ingest", "--from", "claude-code")
    assert (done["project"], done["source"]) == ("billing.api", str(repository))
    assert [f["conversation_id"] for f in done["files"]] == [CLAUDE_SESSION, "sub"]
    assert done["stored"] == 10
    done = run_json(capsys, "--config", local, "ingest", "--from", "codex")
    assert [f["conversation_id"] for f in done["files"]] == [CODEX_SESSION]
    assert (done["project"], done["stored"]) == ("billing.api", 2)


def test_the_options_that_do_not_go_with_from_are_refused(
    capsys: pytest.CaptureFixture[str], local: str, tmp_path: Path
) -> None:
    code, _, err = run(capsys, "--config", local, "ingest")
    assert code == 2 and "--from claude-code|codex" in err
    code, _, err = run(
        capsys, "--config", local, "ingest", "--from", "codex", "--conversation", "x"
    )
    assert code == 2 and "--conversation" in err
    code, _, err = run(capsys, "--config", local, "ingest", "--from", "codex", "-")
    assert code == 2 and "not '-'" in err
    code, _, err = run(capsys, "--config", local, "ingest", "--from", "codex", str(tmp_path / "no"))
    assert code == 2 and "no such file or folder" in err


def test_a_session_id_too_long_for_a_conversation_refuses_its_file(
    capsys: pytest.CaptureFixture[str], local: str, tmp_path: Path
) -> None:
    """Named by its file (no sessionId in it), a session whose name is longer than a
    conversation id may be is refused by the CLI, not sent to fail at the server."""
    session = tmp_path / ("s" * 210 + ".jsonl")
    record = {"type": "user", "message": {"role": "user", "content": "Where is the CI config?"}}
    session.write_text(json.dumps(record) + "\n")
    code, _, err = run(capsys, "--config", local, "ingest", "--from", "claude-code", str(session))
    assert code == 2 and "session id is longer than 200 characters" in err
    assert stored(capsys, local) == 0
