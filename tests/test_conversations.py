"""Conversations in: the folding rules (pure), the file formats of ``tribalmemory ingest``
(pure), and ``POST /v1/conversations`` / ``tribal_ingest_conversation`` / the CLI on the real
engine: turns stored in order with their metadata, episodes formed, a re-send storing
nothing, a longer one only its new turns, bad input refused with nothing stored."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers_http import EPISODES, free_port, start_daemon, write_config
from helpers_runtime import killed_at_sixth_decision, run_killed
from starlette.testclient import TestClient
from test_cli import run, run_json
from test_import_pages import open_runtime

from tribalmemory.cli.transcripts import TranscriptError, read
from tribalmemory.service import turns
from tribalmemory.timeutil import to_iso

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def message(index: int, role: str, content: str, name: str | None = None) -> turns.Message:
    return turns.Message(index, role, content, T0 + timedelta(minutes=index), name)


# -- folding (pure) ------------------------------------------------------------------------------


def test_each_said_message_is_a_turn_named_by_its_speaker() -> None:
    found, folded = turns.turns_of(
        [
            message(0, "user", "The export times out", "dana"),
            message(1, "assistant", "Add an index"),
        ]
    )
    assert [t.text(1000) for t in found] == [
        "dana: The export times out",
        "assistant: Add an index",
    ]
    assert [t.index for t in found] == [0, 1] and folded == 0


def test_system_empty_tool_and_acknowledgements_fold() -> None:
    found, folded = turns.turns_of(
        [
            message(0, "system", "You are a helpful agent"),
            message(1, "user", "Why does the nightly export fail?"),
            message(2, "assistant", "Let me look at the log."),
            message(3, "tool", "ERROR timeout after 30 s " + "x" * 1000),
            message(4, "user", "ok thanks!"),
            message(5, "user", "   "),
            message(6, "user", "Thanks, but why does it scan the whole table?"),
        ]
    )
    assert folded == 4  # system, tool, acknowledgement, empty
    assert [t.index for t in found] == [1, 2, 6]
    second = found[1].text(10_000).split("\n")
    assert second[0] == "assistant: Let me look at the log."
    assert second[1].startswith("[tool] ERROR timeout after 30 s") and len(second[1]) == 7 + 500
    assert second[2] == "user: ok thanks!"
    # a sentence that starts with thanks says something: its own turn
    assert found[2].text(1000).startswith("user: Thanks, but why")


def test_what_comes_before_any_turn() -> None:
    found, folded = turns.turns_of([message(0, "user", "ok"), message(1, "tool", "42 rows")])
    assert folded == 1  # the acknowledgement: nothing to fold into
    assert [t.text(100) for t in found] == ["tool: 42 rows"]  # the tool output stands alone


def test_a_tool_output_keeps_its_first_characters_wherever_it_stands() -> None:
    long = "row " * 5000  # 20,000 characters
    assert turns.tool_output(turns.tool_output(long)) == turns.tool_output(long)
    assert len(turns.tool_output(long)) == turns.TOOL_CHARS
    (alone,), _ = turns.turns_of([message(0, "tool", long)])  # no turn before it
    assert alone.text(100_000) == "tool: " + turns.tool_output(long)


def test_turn_text_is_cut_to_the_limit() -> None:
    (turn,), _ = turns.turns_of([message(0, "user", "y" * 50)])
    assert len(turn.text(20)) == 20 and turn.text(20).endswith("…")


def test_turn_ids_depend_on_project_conversation_and_position() -> None:
    first = turns.turn_id("default", "c1", 0)
    assert first == turns.turn_id("default", "c1", 0)
    assert len({first, turns.turn_id("default", "c1", 1), turns.turn_id("other", "c1", 0)}) == 3
    assert turns.turn_id("default", "c2", 0) != first


@pytest.mark.parametrize(
    ("text", "ack"),
    [("ok", True), ("Sounds good!", True), ("thank you", True), ("LGTM 👍", True),
     ("ok, deploy it now", False), ("no", False), ("no worries", True),
     ("done with the migration", False)],
)  # fmt: skip
def test_acknowledgements(text: str, ack: bool) -> None:
    assert turns.is_acknowledgement(text) is ack


def test_a_message_starts_a_turn_exactly_when_the_folding_makes_it_one() -> None:
    said = [
        message(0, "user", "Why does the export fail?"),
        message(1, "system", "Be brief"),
        message(2, "assistant", "It scans the events table"),
        message(3, "tool", "Seq Scan on events"),
        message(4, "user", "sounds good"),
        message(5, "user", " "),
        message(6, "assistant", "Adding the index now"),
    ]
    found, _ = turns.turns_of(said)
    starting = [m.index for m in said if turns.starts_turn(m.role, m.content)]
    assert starting == [t.index for t in found] == [0, 2, 6]


def test_pages_end_where_a_turn_starts() -> None:
    starts = [True, True, False, True, False, False, True, True]
    assert turns.pages(starts, 4) == [range(0, 3), range(3, 7), range(7, 8)]
    assert turns.pages(starts, 100) == [range(0, 8)]
    assert turns.pages([], 4) == []
    # pages of at most 10 bytes (the weights: each message's), cut where a turn starts, but
    # where they must when no message of a full page does (3-5)
    weights = [4, 4, 4, 4, 4, 4, 4, 4]
    assert turns.pages(starts, 100, weights, 10) == [range(0, 1), range(1, 3), range(3, 5),
                                                     range(5, 7), range(7, 8)]  # fmt: skip
    # a run longer than a page of which no message starts a turn: cut where it must
    assert turns.pages([True, *[False] * 5, True], 3) == [range(0, 3), range(3, 6), range(6, 7)]


# -- files (pure) --------------------------------------------------------------------------------


MESSAGES = [
    {"role": "user", "content": "The export fails", "timestamp": "2026-03-02T09:00:00Z"},
    {"role": "assistant", "content": [{"type": "text", "text": "Add an index"}]},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
]


def test_the_three_formats_read_alike() -> None:
    want = [
        {"role": "user", "content": "The export fails", "timestamp": "2026-03-02T09:00:00Z"},
        {"role": "assistant", "content": "Add an index"},
        {"role": "assistant", "content": ""},
    ]
    document = read(json.dumps({"conversation_id": "c-1", "messages": MESSAGES}))
    assert (document.conversation_id, document.messages) == ("c-1", want)
    assert read(json.dumps(MESSAGES)).messages == want
    lines = read("\n".join(json.dumps(m) for m in MESSAGES) + "\n\n")
    assert (lines.conversation_id, lines.messages) == (None, want)


def test_a_byte_order_mark_is_not_damage() -> None:
    document = json.dumps({"conversation_id": "c-1", "messages": MESSAGES[:1]})
    assert read("\ufeff" + document).conversation_id == "c-1"
    lines = "\ufeff" + "\n".join(json.dumps(m) for m in MESSAGES[:2])
    assert len(read(lines).messages) == 2


def test_damaged_lines_are_named_by_number() -> None:
    text = "\n".join(
        [json.dumps(MESSAGES[0]), "{not json", json.dumps({"role": "bot", "content": "x"}), "[]"]
    )
    with pytest.raises(TranscriptError) as caught:
        read(text)
    assert [p.split(":")[0] for p in caught.value.problems] == ["line 2", "line 3", "line 4"]
    assert "role must be one of user, assistant, system, tool, not 'bot'" in str(caught.value)
    with pytest.raises(TranscriptError, match="message 2: content must be a string"):
        read(json.dumps([MESSAGES[0], {"role": "user", "content": 7}]))
    with pytest.raises(TranscriptError, match="role must be one of user, .*, missing"):
        read(json.dumps([MESSAGES[0], {"content": "no role"}]))  # it said "not None"


def test_a_damaged_indented_document_is_named_by_the_line_where_it_breaks() -> None:
    """A conversation written over many lines (indented JSON) with one mistake is one damaged
    document, not many damaged JSON lines."""
    document = {"conversation_id": "c-1", "messages": MESSAGES[:2]}
    lines = json.dumps(document, indent=2).splitlines()
    broken = next(n for n, line in enumerate(lines) if '"Add an index"' in line)
    lines[broken] += ",,"
    with pytest.raises(TranscriptError) as caught:
        read("\n".join(lines))
    assert caught.value.problems == [
        f"line {broken + 1}: not JSON: Expecting property name enclosed in double quotes"
    ]


# -- the real engine over HTTP -------------------------------------------------------------------


def said(minutes: int, role: str, content: str, name: str | None = None) -> dict[str, Any]:
    out = {"role": role, "content": content, "timestamp": to_iso(T0 + timedelta(minutes=minutes))}
    return out | ({"name": name} if name else {})


CONVERSATION = [
    said(0, "user", "Our nightly export job fails with a timeout since Monday", "dana"),
    said(1, "assistant", "The export query scans the whole events table without an index"),
    said(2, "tool", "EXPLAIN: Seq Scan on events (cost=0.00..912345.00)"),
    said(3, "user", "ok"),
    said(4, "user", "Can you add an index on events.created_at for the export?", "dana"),
    said(5, "assistant", "Added the index on events.created_at; the export query now finishes"),
]


def ingest(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/conversations", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_a_conversation_is_stored_a_turn_a_memory_and_forms_an_episode(
    client: TestClient,
) -> None:
    done = ingest(client, conversation_id="support-1", messages=CONVERSATION)
    assert {k: done[k] for k in ("messages", "turns", "stored", "existing", "folded")} == {
        "messages": 6, "turns": 4, "stored": 4, "existing": 0, "folded": 2,
    }  # fmt: skip
    memories = [client.get(f"/v1/memory/{i}").json() for i in done["memory_ids"]]
    assert [m["content"].split("\n")[0] for m in memories] == [
        "dana: Our nightly export job fails with a timeout since Monday",
        "assistant: The export query scans the whole events table without an index",
        "dana: Can you add an index on events.created_at for the export?",
        "assistant: Added the index on events.created_at; the export query now finishes",
    ]
    assert memories[1]["content"].split("\n")[1:] == [
        "[tool] EXPLAIN: Seq Scan on events (cost=0.00..912345.00)",
        "user: ok",
    ]
    assert [m["metadata"]["message_index"] for m in memories] == [0, 1, 4, 5]
    assert [m["metadata"]["role"] for m in memories] == ["user", "assistant", "user", "assistant"]
    assert {m["metadata"]["conversation_id"] for m in memories} == {"support-1"}
    assert [m["source_instance"] for m in memories][0] == "dana"
    assert [m["created_at"] for m in memories] == [
        to_iso(T0 + timedelta(minutes=k)) for k in (0, 1, 4, 5)
    ]
    episodes = {m["episode_id"] for m in memories}
    assert len(episodes) == 1 and None not in episodes  # one sitting, one episode


def test_a_tool_output_longer_than_a_memory_is_taken_and_cut(client: TestClient) -> None:
    """An agent's tool output (a file read, a log) may be longer than server.max_content_chars:
    only its first characters are kept, so it is not refused."""
    log = "ERROR timeout after 30 s\n" * 1200  # 30,000 characters
    messages = [*CONVERSATION[:2], said(2, "tool", log)]
    done = ingest(client, conversation_id="long-tool", messages=messages)
    assert (done["turns"], done["stored"], done["folded"]) == (2, 2, 1)
    answer = client.get(f"/v1/memory/{done['memory_ids'][1]}").json()["content"]
    assert answer.split("\n", 1)[1] == "[tool] " + turns.tool_output(log)
    too_long = {"conversation_id": "c", "messages": [said(0, "user", log)]}
    assert client.post("/v1/conversations", json=too_long).status_code == 413  # not a tool's


def test_each_sitting_is_an_episode_whatever_its_turns_talk_about(client: TestClient) -> None:
    """Turns at most an hour apart are one sitting, one episode, small talk included; a turn
    two days later starts the next sitting, which is not merged into the first though the
    same people talk (the engine's resumption check would merge such threads)."""
    later = 2 * 24 * 60
    second = [
        said(later, "user", "Back from the weekend: the export ran fine every night", "dana"),
        said(later + 1, "assistant", "Good; the events index keeps the export under a minute"),
        said(later + 2, "user", "By the way, the team lunch moved to Thursday", "dana"),
        said(later + 3, "assistant", "Noted, Thursday lunch with the data team"),
    ]
    done = ingest(client, conversation_id="sittings", messages=[*CONVERSATION, *second])
    episodes = [client.get(f"/v1/memory/{i}").json()["episode_id"] for i in done["memory_ids"]]
    assert len(episodes) == 8 and None not in episodes
    assert len(set(episodes[:4])) == 1 and len(set(episodes[4:])) == 1
    assert episodes[0] != episodes[4]


async def test_sittings_carry_on_across_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversation's latest turn and its sittings are kept in the episode database: after a
    restart, small talk a minute after the last turn still goes into that sitting's episode,
    and a sitting two days later is not merged into it though the same people talk."""
    folder = tmp_path / "data"
    runtime = await open_runtime(folder, monkeypatch)
    try:
        lunch = [  # a thread of its own that the small talk below would join by its words
            "Team lunch with the data team is planned for Wednesday at noon",
            "The team lunch with the data team: Wednesday noon, the Thai place",
            "Team lunch for the data team booked: Wednesday noon at the Thai place",
        ]
        for minutes, text in enumerate(lunch):
            await runtime.api.remember(text, created_at=T0 - timedelta(minutes=30 - minutes))
        first = await runtime.api.ingest_conversation(
            conversation_id="restart", messages=CONVERSATION
        )
        assert await runtime.episodes.worker.drain(60)
    finally:
        await runtime.stop()
    later = 2 * 24 * 60
    more = [
        said(6, "user", "By the way, the team lunch with the data team moved to Thursday"),
        said(later, "user", "Back from the weekend: the export ran fine every night", "dana"),
        said(later + 1, "assistant", "Good; the events index keeps the export under a minute"),
    ]
    runtime = await open_runtime(folder, monkeypatch)
    try:
        done = await runtime.api.ingest_conversation(
            conversation_id="restart", messages=more, first_index=len(CONVERSATION)
        )
        assert await runtime.episodes.worker.drain(60)
        ids = first["memory_ids"] + done["memory_ids"]
        annotated = runtime.service.annotate(await runtime.service.get_many(ids))
        episodes = [annotated[i]["episode_id"] for i in ids]
    finally:
        await runtime.stop()
    assert None not in episodes
    assert len(set(episodes[:5])) == 1  # the small talk stayed in its sitting
    assert len(set(episodes[5:])) == 1 and episodes[5] != episodes[0]  # the next sitting


def test_sending_again_stores_nothing_and_a_longer_version_only_its_new_turns(
    client: TestClient,
) -> None:
    first = ingest(client, conversation_id="c-2", messages=CONVERSATION[:2])
    again = ingest(client, conversation_id="c-2", messages=CONVERSATION[:2])
    assert (again["stored"], again["existing"]) == (0, 2)
    assert again["memory_ids"] == first["memory_ids"]
    longer = ingest(client, conversation_id="c-2", messages=CONVERSATION)
    assert (longer["stored"], longer["existing"]) == (2, 2)
    assert longer["memory_ids"][:2] == first["memory_ids"]
    # a page of the same conversation sent alone lands at its position
    page = ingest(client, conversation_id="c-2", messages=CONVERSATION[4:], first_index=4)
    assert (page["stored"], page["memory_ids"]) == (0, longer["memory_ids"][2:])
    listed = client.get("/v1/memories", params={"limit": 100}).json()["memories"]
    assert len([m for m in listed if m["metadata"].get("conversation_id") == "c-2"]) == 4


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({"messages": CONVERSATION}, 422, "conversation_id"),
        ({"conversation_id": "c", "messages": []}, 422, "messages must be a list of 1 to 1000"),
        (
            {"conversation_id": "c", "messages": [*CONVERSATION, {"role": "bot", "content": "x"}]},
            422,
            "messages[6]: role must be one of user, assistant, system, tool, not 'bot'",
        ),
        (
            {"conversation_id": "c", "messages": [{"role": "user", "content": "x", "colour": 1}]},
            422,
            "messages[0]: unknown field 'colour'",
        ),
        (
            {"conversation_id": "c", "messages": [said(0, "user", "x" * 20_001)]},
            413,
            "messages[0]: content has 20001 characters",
        ),
        (
            {
                "conversation_id": "c",
                "messages": [{"role": "user", "content": "x", "timestamp": "2999-01-01T00:00:00Z"}],
            },
            422,
            "messages[0]: timestamp",
        ),
        ({"conversation_id": "c", "messages": CONVERSATION, "first_index": -1}, 422, "first_index"),
    ],
)
def test_bad_input_is_refused_with_nothing_stored(
    client: TestClient, body: dict[str, Any], status: int, fragment: str
) -> None:
    response = client.post("/v1/conversations", json=body)
    assert response.status_code == status, response.text
    assert fragment in response.json()["error"]
    assert client.get("/v1/stats").json()["total_memories"] == 0


# -- the CLI --------------------------------------------------------------------------------------


@pytest.fixture
def local(tm_home: Path) -> str:
    """A config for local mode (no daemon answers on its port), episodes on."""
    return str(write_config(tm_home, server={"port": free_port()}))


def test_cli_ingests_each_format_and_refuses_a_damaged_file(
    capsys: pytest.CaptureFixture[str], local: str, tmp_path: Path
) -> None:
    document = tmp_path / "session.json"
    document.write_text(json.dumps({"conversation_id": "cli-1", "messages": CONVERSATION}))
    done = run_json(capsys, "--config", local, "ingest", str(document))
    assert (done["conversation_id"], done["turns"], done["stored"]) == ("cli-1", 4, 4)
    listed = tmp_path / "openai.json"
    listed.write_text(json.dumps(CONVERSATION[:2]))
    code, _, err = run(capsys, "--config", local, "ingest", str(listed))
    assert code == 2 and "give --conversation ID" in err
    done = run_json(capsys, "--config", local, "ingest", str(listed), "--conversation", "cli-1")
    assert (done["stored"], done["existing"]) == (0, 2)  # the same conversation's first turns
    lines = tmp_path / "session.jsonl"
    lines.write_text("\n".join(json.dumps(m) for m in CONVERSATION))
    done = run_json(capsys, "--config", local, "ingest", str(lines), "--conversation", "cli-2")
    assert (done["turns"], done["stored"]) == (4, 4)
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(json.dumps(CONVERSATION[0]) + "\n{oops\n" + json.dumps(CONVERSATION[1]))
    code, _, err = run(capsys, "--config", local, "ingest", str(damaged), "--conversation", "x")
    assert code == 2 and "line 2: not JSON" in err and "nothing was sent" in err
    future = tmp_path / "future.jsonl"
    future.write_text(
        json.dumps({"role": "user", "content": "x", "timestamp": "2999-01-01T00:00:00Z"})
    )
    code, _, err = run(capsys, "--config", local, "ingest", str(future), "--conversation", "y")
    assert code == 2 and "message 1: timestamp" in err
    stats = run_json(capsys, "--config", local, "stats")
    # cli-1 and cli-2 (episode summaries aside); nothing of the refused files
    assert stats["by_source_type"]["AUTO_CAPTURE"] == 8


def test_cli_reads_standard_input(
    capsys: pytest.CaptureFixture[str], local: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = "\n".join(json.dumps(m) for m in CONVERSATION)
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    done = run_json(capsys, "--config", local, "ingest", "-", "--conversation", "piped")
    assert (done["conversation_id"], done["turns"], done["stored"]) == ("piped", 4, 4)


def test_cli_pages_make_the_turns_of_the_whole_conversation(
    capsys: pytest.CaptureFixture[str], local: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sent in pages of at most 4 messages, the conversation makes the turns it makes sent in
    one request: no page starts with a tool output or an acknowledgement (which would have no
    turn before it), and a page's first message without a time takes the time of the last
    message before it (not the time of the request)."""
    from tribalmemory.cli import ingest as ingest_command

    monkeypatch.setattr(ingest_command, "PAGE", 4)
    messages = [
        {"role": "user", "content": "The nightly export fails", "timestamp": to_iso(T0)},
        {"role": "assistant", "content": "Looking at the export query plan"},
        {"role": "assistant", "content": "Running EXPLAIN on the export query"},
        {"role": "user", "content": "Please check the events table first"},
        {"role": "tool", "content": "Seq Scan on events (cost=0.00..912345.00)"},
        {"role": "user", "content": "thanks"},
        {"role": "user", "content": "Add an index on events.created_at please"},
        {"role": "assistant", "content": "Index added; the export finishes in two minutes"},
    ]  # fmt: skip
    source = tmp_path / "paged.jsonl"
    source.write_text("\n".join(json.dumps(m) for m in messages))
    done = run_json(capsys, "--config", local, "ingest", str(source), "--conversation", "paged")
    assert (done["messages"], done["turns"], done["stored"], done["folded"]) == (8, 6, 6, 2)
    whole = [0, 1, 2, 3, 6, 7]  # the turns of the conversation sent in one request
    assert done["memory_ids"] == [turns.turn_id(done["project"], "paged", i) for i in whole]
    code, out, _ = run(capsys, "--config", local, "export")
    records = [json.loads(line) for line in out.splitlines()]
    by_id = {r["id"]: r for r in records if "content" in r and "id" in r}
    shown = [by_id[i] for i in done["memory_ids"]]
    assert shown[3]["content"].split("\n") == [
        "user: Please check the events table first",
        "[tool] Seq Scan on events (cost=0.00..912345.00)",
        "user: thanks",
    ]
    assert {m["created_at"] for m in shown} == {to_iso(T0)}
    monkeypatch.setattr(ingest_command, "PAGE", 500)
    again = run_json(capsys, "--config", local, "ingest", str(source), "--conversation", "paged")
    assert (again["stored"], again["existing"], again["memory_ids"]) == (0, 6, done["memory_ids"])


# -- a crash in the middle of an ingest ----------------------------------------------------------


KILLER = killed_at_sixth_decision(
    "tribalmemory.service.conversations",
    "runtime.api.ingest_conversation(**json.loads(Path(sys.argv[2]).read_text()))",
)

TOPICS = ["the export timeout", "the events index", "the staging port", "the release notes"]


async def test_an_ingest_killed_in_the_middle_is_completed_by_sending_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL while the second page of a 12-turn conversation is being placed: the 8 turns
    stored survive, sending the conversation again stores the 4 others once, every turn is
    decided by the episode engine, and no turn is stored twice or in two episodes."""
    messages = [
        said(i, "user" if i % 2 == 0 else "assistant", f"Turn {i} about {TOPICS[i // 3]}: step {i}")
        for i in range(12)
    ]
    body = {"conversation_id": "crash-1", "messages": messages}
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    folder = tmp_path / "data"
    config = write_config(folder, episodes=EPISODES)
    run_killed(KILLER, config, request, folder)

    ids = [turns.turn_id("default", "crash-1", i) for i in range(12)]
    runtime = await open_runtime(folder, monkeypatch)
    try:
        stored = {m.id for m in await runtime.service.get_many(ids)}
        assert stored == set(ids[:8])  # two pages of 4, acknowledged; the third never sent
        done = await runtime.api.ingest_conversation(**body)
        assert (done["stored"], done["existing"], done["memory_ids"]) == (4, 8, ids)
        assert await runtime.episodes.worker.drain(60)
        memories = await runtime.service.get_many(ids)
        assert sorted(m.metadata["message_index"] for m in memories) == list(range(12))
        listed = await runtime.api.memories_list(limit=100)
        turns_listed = [m for m in listed["memories"] if m["metadata"].get("conversation_id")]
        assert len(turns_listed) == 12  # each turn once
        states = runtime.episodes.store.detections.states(ids)
        assert set(states) == set(ids) and "pending" not in states.values()
        members = runtime.episodes.store.memberships.all_member_ids()
        assert len(members) == len(set(members))  # no turn in two episodes
        again = await runtime.api.ingest_conversation(**body)
        assert (again["stored"], again["existing"]) == (0, 12)
    finally:
        await runtime.stop()


def test_cli_pages_fit_the_daemons_request_body_limit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A conversation larger than the daemon's server.max_body_bytes goes in several requests,
    each within it, a tool output cut to what is kept before it is sent; a single message too
    large for any request is refused before anything is sent."""
    daemon = start_daemon(tmp_path, server={"max_body_bytes": 10_000})
    try:
        config = str(daemon.config_path)
        messages = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"step {i}: " + "x" * 900}
            for i in range(24)
        ]  # about 22 kB
        messages.insert(3, {"role": "tool", "content": "z" * 30_000})  # sent as kept
        source = tmp_path / "long.jsonl"
        source.write_text("\n".join(json.dumps(m) for m in messages))
        done = run_json(capsys, "--config", config, "ingest", str(source), "--conversation", "big")
        assert (done["messages"], done["turns"], done["stored"]) == (25, 24, 24)
        huge = tmp_path / "huge.jsonl"
        huge.write_text(json.dumps({"role": "user", "content": "y" * 6_000}))
        code, _, err = run(capsys, "--config", config, "ingest", str(huge), "--conversation", "h")
        assert code == 2 and "message 1 is 6" in err and "server.max_body_bytes" in err
        assert run_json(capsys, "--config", config, "stats")["total_memories"] == 24
    finally:
        assert daemon.stop() == 0
